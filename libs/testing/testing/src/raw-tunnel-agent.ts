import {
  type ChannelCredentials,
  type ChannelOptions,
  Client,
  type ClientDuplexStream,
  Metadata,
  type ServiceError,
} from '@grpc/grpc-js';
import {
  AGENT_TUNNEL_CONNECT_PATH,
  decodeFrame,
  encodeFrame,
  type Frame,
  frame,
  type Open,
} from '@pullplane/proto';

export interface RawTunnelAgentOptions {
  /** The gateway's agent listener, host:port. */
  address: string;
  credentials: ChannelCredentials;
  metadata?: Metadata;
  channelOptions?: ChannelOptions;
  /** The Hello it opens with (versions 1–2 and no name by default), or false for none. */
  hello?:
    | {
        minProtocolVersion?: number;
        maxProtocolVersion?: number;
        agentName?: string;
        heartbeatIntervalMs?: number;
      }
    | false;
}

export interface RawTunnelAgent {
  /** The tunnel call itself: `write` whole gRPC messages of the test's choosing, `pause` reading. */
  readonly call: ClientDuplexStream<Frame, Frame>;
  /** Welcome, or the error that ended the call before it. */
  readonly welcome?: Frame;
  readonly error?: ServiceError;
  /** Every message the gateway sent after Welcome, in order (batches as they came). */
  readonly frames: Frame[];
  /** Every Open the gateway sent, batches unpacked. */
  readonly opens: Open[];
  /** The path of the first HTTP Open. */
  readonly firstOpen: Promise<string>;
  /** Resolves when the call ends: the gateway's error, or undefined for a clean end or a cancel. */
  readonly ended: Promise<ServiceError | undefined>;
  /** Resolves with the first `n` Opens once they arrived. */
  opensArrived(n: number): Promise<Open[]>;
  close(): void;
}

/**
 * An agent's tunnel by hand, for tests that play a misbehaving or a minimal agent: it says Hello
 * (unless told not to) and then only what the test writes; it answers nothing, not even pings.
 * Resolves once Welcome or an error arrived, keeping the call open.
 */
export function dialRawAgent(opts: RawTunnelAgentOptions): Promise<RawTunnelAgent> {
  const client = new Client(opts.address, opts.credentials, opts.channelOptions ?? {});
  const call = client.makeBidiStreamRequest<Frame, Frame>(
    AGENT_TUNNEL_CONNECT_PATH,
    encodeFrame,
    decodeFrame,
    opts.metadata ?? new Metadata(),
  );
  const close = () => {
    call.cancel();
    client.close();
  };
  if (opts.hello !== false) {
    call.write(
      frame({
        case: 'hello',
        value: {
          minProtocolVersion: opts.hello?.minProtocolVersion ?? 1,
          maxProtocolVersion: opts.hello?.maxProtocolVersion ?? 2,
          agentVersion: 'raw',
          agentName: opts.hello?.agentName ?? '',
          heartbeatIntervalMs: opts.hello?.heartbeatIntervalMs ?? 30_000,
        },
      }),
    );
  }
  const frames: Frame[] = [];
  const opens: Open[] = [];
  const waiters: Array<() => void> = [];
  let opened: (path: string) => void = () => undefined;
  const firstOpen = new Promise<string>((resolve) => {
    opened = resolve;
  });
  const ended = new Promise<ServiceError | undefined>((resolve) => {
    call.on('error', (error: ServiceError) => resolve(error));
    call.on('end', () => resolve(undefined));
    call.on('close', () => resolve(undefined));
  });
  const opensArrived = (n: number) =>
    new Promise<Open[]>((resolve) => {
      const check = () => (opens.length >= n ? resolve(opens.slice(0, n)) : waiters.push(check));
      check();
    });
  return new Promise((resolve) => {
    call.on('data', (f: Frame) => {
      if (f.kind.case === 'welcome') {
        resolve({ call, welcome: f, frames, opens, firstOpen, ended, opensArrived, close });
        return;
      }
      frames.push(f);
      for (const x of f.kind.case === 'batch' ? f.kind.value.frames : [f]) {
        if (x.kind.case !== 'open') continue;
        opens.push(x.kind.value);
        if (x.kind.value.head.case === 'http') opened(x.kind.value.head.value.path);
      }
      for (const w of waiters.splice(0)) w();
    });
    call.on('error', (error: ServiceError) =>
      resolve({ call, error, frames, opens, firstOpen, ended, opensArrived, close }),
    );
  });
}
