/**
 * Where each Redis command carries keys, from Redis 7.0's `COMMAND` table (first key, last
 * key, step; negative last counts from the end). Commands with movable keys (EVAL, SORT,
 * ZUNIONSTORE, XREAD, …), container commands whose subcommands take keys (OBJECT, MEMORY,
 * XINFO, XGROUP, DEBUG) and commands missing here (newer Redis, modules) have every argument
 * checked instead: a conservative rule, so an agent key can never slip through unseen.
 */
export type KeySpec =
  | { readonly kind: 'none' }
  | { readonly kind: 'range'; readonly first: number; readonly last: number; readonly step: number }
  | { readonly kind: 'all-args' };

const NONE: KeySpec = { kind: 'none' };
const ALL_ARGS: KeySpec = { kind: 'all-args' };
const FIRST: KeySpec = { kind: 'range', first: 1, last: 1, step: 1 };

const NO_KEYS =
  'acl asking auth bgrewriteaof bgsave client cluster command config dbsize discard echo exec failover flushall flushdb function hello info keys lastsave latency lolwut module monitor multi pfselftest ping psubscribe psync publish pubsub punsubscribe quit randomkey readonly readwrite replconf replicaof reset role save scan script select shutdown slaveof slowlog subscribe swapdb sync time unsubscribe unwatch wait';

const FIRST_KEY =
  'append bitcount bitfield bitfield_ro bitpos decr decrby dump expire expireat expiretime geoadd geodist geohash geopos georadius_ro georadiusbymember_ro geosearch get getbit getdel getex getrange getset hdel hexists hget hgetall hincrby hincrbyfloat hkeys hlen hmget hmset hrandfield hscan hset hsetnx hstrlen hvals incr incrby incrbyfloat lindex linsert llen lpop lpos lpush lpushx lrange lrem lset ltrim move persist pexpire pexpireat pexpiretime pfadd psetex pttl restore restore-asking rpop rpush rpushx sadd scard set setbit setex setnx setrange sismember smembers smismember spop spublish srandmember srem sscan strlen substr ttl type xack xadd xautoclaim xclaim xdel xlen xpending xrange xrevrange xsetid xtrim zadd zcard zcount zincrby zlexcount zmscore zpopmax zpopmin zrandmember zrange zrangebylex zrangebyscore zrank zrem zremrangebylex zremrangebyrank zremrangebyscore zrevrange zrevrangebylex zrevrangebyscore zrevrank zscan zscore';

// name:first:last:step
const RANGES =
  'bitop:2:-1:1 blmove:1:2:1 blpop:1:-2:1 brpop:1:-2:1 brpoplpush:1:2:1 bzpopmax:1:-2:1 bzpopmin:1:-2:1 copy:1:2:1 del:1:-1:1 exists:1:-1:1 geosearchstore:1:2:1 lcs:1:2:1 lmove:1:2:1 mget:1:-1:1 mset:1:-1:2 msetnx:1:-1:2 pfcount:1:-1:1 pfdebug:2:2:1 pfmerge:1:-1:1 rename:1:2:1 renamenx:1:2:1 rpoplpush:1:2:1 sdiff:1:-1:1 sdiffstore:1:-1:1 sinter:1:-1:1 sinterstore:1:-1:1 smove:1:2:1 ssubscribe:1:-1:1 sunion:1:-1:1 sunionstore:1:-1:1 sunsubscribe:1:-1:1 touch:1:-1:1 unlink:1:-1:1 watch:1:-1:1 zrangestore:1:2:1';

const TABLE = new Map<string, KeySpec>();
for (const name of NO_KEYS.split(' ')) TABLE.set(name, NONE);
for (const name of FIRST_KEY.split(' ')) TABLE.set(name, FIRST);
for (const entry of RANGES.split(' ')) {
  const [name, first, last, step] = entry.split(':');
  TABLE.set(name!, { kind: 'range', first: Number(first), last: Number(last), step: Number(step) });
}

export function keySpec(name: string): KeySpec {
  return TABLE.get(name) ?? ALL_ARGS;
}

/** True when the command can name more than one key (its error then says "cannot span"). */
export function isMultiKey(spec: KeySpec): boolean {
  return spec.kind === 'all-args' || (spec.kind === 'range' && spec.last !== spec.first);
}

/**
 * Calls `visit` with the index (into `args`, which excludes the command name) of every key
 * argument, stopping when it returns true. Returns whether it stopped.
 */
export function someKey(spec: KeySpec, args: readonly Buffer[], visit: (index: number) => boolean): boolean {
  if (spec.kind === 'none') return false;
  if (spec.kind === 'all-args') {
    for (let i = 0; i < args.length; i++) if (visit(i)) return true;
    return false;
  }
  // Positions count the command name as 0, as in COMMAND's output.
  const argc = args.length + 1;
  const last = spec.last < 0 ? argc + spec.last : spec.last;
  for (let pos = spec.first; pos <= last && pos < argc; pos += spec.step) if (visit(pos - 1)) return true;
  return false;
}
