import { setTimeout as sleep } from 'node:timers/promises';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { BusError, BusErrorCode } from './errors.js';
import type { NatsBusOptions } from './nats-bus.js';

// Errors no retry can fix: NATS refusing the credentials, or a TLS mismatch.
const TLS_FAILURE = /tls|certificate|self[- ]signed|CERT_|ERR_SSL|UNABLE_TO_/i;

/**
 * The first connection: refused credentials and TLS failures end startup with a clear error;
 * an unreachable NATS is retried (with a warning now and then) until it answers, as NATS may
 * start after the services. Once connected, nats.js reconnects forever.
 */
export async function connectOnce(
  opts: NatsBusOptions,
  identity: string,
  warn: (message: string, err?: unknown) => void,
): Promise<NatsConnection> {
  const where = String(opts.servers);
  const deadline =
    opts.firstConnectTimeoutMs === undefined ? undefined : Date.now() + opts.firstConnectTimeoutMs;
  for (let attempt = 1; ; attempt++) {
    try {
      return await connect({
        servers: opts.servers,
        name: opts.name,
        maxReconnectAttempts: -1,
        reconnectTimeWait: 250,
        reconnectJitter: 250,
        waitOnFirstConnect: false,
        ...(opts.firstConnectTimeoutMs ? { timeout: opts.firstConnectTimeoutMs } : {}),
        // Keep reconnecting through refused credentials (a rotation in progress): the files are
        // read again on every attempt.
        ignoreAuthErrorAbort: true,
        pingInterval: 5_000,
        maxPingOut: 2,
        ...opts.security?.options,
      });
    } catch (err) {
      const text = `${String(err)} ${String((err as { code?: unknown }).code ?? '')} ${String((err as { cause?: unknown }).cause ?? '')}`;
      if ((err as { name?: unknown }).name === 'AuthorizationError')
        throw new BusError(
          BusErrorCode.AUTH_REFUSED,
          identity === 'none'
            ? `NATS at ${where} requires credentials (${String(err)}): set --nats-nkey-seed-path, --nats-creds-path, --nats-user with --nats-password-path, or a client certificate`
            : `NATS at ${where} refused ${identity} (${String(err)}): check the credentials against the NATS server's users`,
          { cause: err },
        );
      if (TLS_FAILURE.test(text))
        throw new BusError(BusErrorCode.CONNECT_FAILED, `TLS to NATS at ${where} failed: ${String(err)}`, {
          cause: err,
        });
      if (deadline !== undefined && Date.now() >= deadline)
        throw new BusError(
          BusErrorCode.CONNECT_FAILED,
          `cannot connect to NATS at ${where}: ${String(err)}${
            opts.security?.options.tls && !opts.security.options.tls.certFile
              ? ' (a NATS that verifies client certificates drops a client without one: --nats-tls-cert-path, --nats-tls-key-path)'
              : ''
          }`,
          {
            cause: err,
          },
        );
      if (attempt === 1 || attempt % 30 === 0)
        warn(`cannot reach NATS at ${where} (attempt ${attempt}); retrying`, err);
      await sleep(Math.max(0, Math.min(250 * attempt, 2_000, (deadline ?? Infinity) - Date.now())));
    }
  }
}
