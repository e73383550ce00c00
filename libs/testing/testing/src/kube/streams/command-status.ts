/**
 * How a finished exec or attach is reported on the error channel. Two writers exist in a real
 * cluster and the fake plays both: the kubelet (SPDY, and WebSocket below v5, which the API server
 * passes through) and the API server's WebSocket-to-SPDY translator (v5.channel.k8s.io), which
 * re-wraps what the kubelet reported.
 */

export type CommandOutcome =
  | { kind: 'exit'; code: number; command: readonly string[] }
  /** The runtime could not run the command; `message` as the kubelet words it. */
  | { kind: 'error'; message: string };

export type StatusWriter = 'kubelet' | 'translator';

/** Protocols whose error channel carries a JSON Status (v4 and v5); older ones carry plain text. */
export function usesJsonStatus(protocol: string): boolean {
  return protocol.startsWith('v4.') || protocol.startsWith('v5.');
}

interface GoStatus {
  metadata: Record<string, never>;
  status: 'Success' | 'Failure';
  message?: string;
  reason?: string;
  details?: { causes: Array<{ reason?: string; message: string }> };
  code?: number;
}

/** metav1.Status as Go's json.Marshal writes a StatusError's status: no kind, fields in this order. */
function statusOf(outcome: CommandOutcome, writer: StatusWriter): GoStatus {
  if (outcome.kind === 'exit') {
    if (outcome.code === 0) return { metadata: {}, status: 'Success' };
    const cause =
      writer === 'translator'
        ? `command terminated with exit code ${outcome.code}`
        : `error executing command [${outcome.command.join(' ')}], exit code ${outcome.code}`;
    return {
      metadata: {},
      status: 'Failure',
      message: `command terminated with non-zero exit code: ${cause}`,
      reason: 'NonZeroExitCode',
      details: { causes: [{ reason: 'ExitCode', message: String(outcome.code) }] },
    };
  }
  // The translator gets the kubelet's InternalError as a plain error and wraps it once more.
  const inner = writer === 'translator' ? `Internal error occurred: ${outcome.message}` : outcome.message;
  return {
    metadata: {},
    status: 'Failure',
    message: `Internal error occurred: ${inner}`,
    reason: 'InternalError',
    details: { causes: [{ message: inner }] },
    code: 500,
  };
}

/** The bytes to write on the error channel, or undefined when nothing is written (success before v4). */
export function statusPayload(
  outcome: CommandOutcome,
  protocol: string,
  writer: StatusWriter,
): Buffer | undefined {
  const status = statusOf(outcome, writer);
  if (usesJsonStatus(protocol)) return Buffer.from(JSON.stringify(status));
  return status.status === 'Success' ? undefined : Buffer.from(status.message ?? '');
}
