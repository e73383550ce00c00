/**
 * Redis' command names (Redis 7.0's `COMMAND LIST`, plus what 7.2–8.0 added that clients such
 * as go-redis send), so metrics can label a refused command by its name without letting a
 * client mint label values: anything else is counted as `unknown`.
 */
const TOP_LEVEL = [
  'acl append asking auth bgrewriteaof bgsave bitcount bitfield bitfield_ro bitop bitpos blmove',
  'blmpop blpop brpop brpoplpush bzmpop bzpopmax bzpopmin client cluster command config copy dbsize',
  'debug decr decrby del discard dump echo eval eval_ro evalsha evalsha_ro exec exists expire',
  'expireat expiretime failover fcall fcall_ro flushall flushdb function geoadd geodist geohash',
  'geopos georadius georadius_ro georadiusbymember georadiusbymember_ro geosearch geosearchstore',
  'get getbit getdel getex getrange getset hdel hello hexists hexpire hexpireat hexpiretime hget',
  'hgetall hgetdel hgetex hincrby hincrbyfloat hkeys hlen hmget hmset hpersist hpexpire hpexpireat',
  'hpexpiretime hpttl hrandfield hscan hset hsetex hsetnx hstrlen httl hvals incr incrby',
  'incrbyfloat info keys lastsave latency lcs lindex linsert llen lmove lmpop lolwut lpop lpos',
  'lpush lpushx lrange lrem lset ltrim memory mget migrate module monitor move mset msetnx multi',
  'object persist pexpire pexpireat pexpiretime pfadd pfcount pfdebug pfmerge pfselftest ping',
  'psetex psubscribe psync pttl publish pubsub punsubscribe quit randomkey readonly readwrite',
  'rename renamenx replconf replicaof reset restore restore-asking role rpop rpoplpush rpush rpushx',
  'sadd save scan scard script sdiff sdiffstore select set setbit setex setnx setrange shutdown',
  'sinter sintercard sinterstore sismember slaveof slowlog smembers smismember smove sort sort_ro',
  'spop spublish srandmember srem sscan ssubscribe strlen subscribe substr sunion sunionstore',
  'sunsubscribe swapdb sync time touch ttl type unlink unsubscribe unwatch wait waitaof watch xack',
  'xadd xautoclaim xclaim xdel xgroup xinfo xlen xpending xrange xread xreadgroup xrevrange xsetid',
  'xtrim zadd zcard zcount zdiff zdiffstore zincrby zinter zintercard zinterstore zlexcount zmpop',
  'zmscore zpopmax zpopmin zrandmember zrange zrangebylex zrangebyscore zrangestore zrank zrem',
  'zremrangebylex zremrangebyrank zremrangebyscore zrevrange zrevrangebylex zrevrangebyscore',
  'zrevrank zscan zscore zunion zunionstore',
].join(' ');
const SUBCOMMANDS = [
  'acl:cat,deluser,dryrun,genpass,getuser,help,list,load,log,save,setuser,users,whoami',
  'client:caching,getname,getredir,help,id,info,kill,list,maint_notifications,no-evict,no-touch,pause,reply,setinfo,setname,tracking,trackinginfo,unblock,unpause',
  'cluster:addslots,addslotsrange,bumpepoch,count-failure-reports,countkeysinslot,delslots,delslotsrange,failover,flushslots,forget,getkeysinslot,help,info,keyslot,links,meet,myid,nodes,replicas,replicate,reset,saveconfig,set-config-epoch,setslot,shards,slaves,slots',
  'command:count,docs,getkeys,getkeysandflags,help,info,list config:get,help,resetstat,rewrite,set',
  'function:delete,dump,flush,help,kill,list,load,restore,stats',
  'latency:doctor,graph,help,histogram,history,latest,reset',
  'memory:doctor,help,malloc-stats,purge,stats,usage module:help,list,load,loadex,unload',
  'object:encoding,freq,help,idletime,refcount',
  'pubsub:channels,help,numpat,numsub,shardchannels,shardnumsub',
  'script:debug,exists,flush,help,kill,load slowlog:get,help,len,reset',
  'xgroup:create,createconsumer,delconsumer,destroy,help,setid xinfo:consumers,groups,help,stream',
].join(' ');

const KNOWN = new Set(TOP_LEVEL.split(' '));
/** Container commands and their subcommands (`config` → get, set, …). */
const CONTAINERS = new Map<string, Set<string>>();
for (const entry of SUBCOMMANDS.split(' ')) {
  const [name, subs] = entry.split(':') as [string, string];
  CONTAINERS.set(name, new Set(subs.split(',')));
  for (const sub of subs.split(',')) KNOWN.add(`${name}|${sub}`);
}

/** Whether the command has subcommands that mean different things (CLIENT ID vs CLIENT KILL). */
export function isContainerCommand(name: string): boolean {
  return CONTAINERS.has(name);
}

/** A bounded metric label for a command (`get`, `config|set`), `unknown` for names Redis does not have. */
export function commandLabel(name: string): string {
  return KNOWN.has(name) ? name : 'unknown';
}
