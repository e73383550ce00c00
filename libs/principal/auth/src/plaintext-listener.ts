import { isLoopback } from '@pullplane/names';

export interface PlaintextListenerSettings {
  insecurePlaintext: boolean;
  allowInsecureNonLoopback: boolean;
  /** The listeners that would serve in plaintext, by the flag that sets their address. */
  listeners: ReadonlyArray<{ flag: string; host: string }>;
  /** How callers of those listeners are identified (`--auth`), when it parsed. */
  callerMethod?: { flag: string; kind: string } | undefined;
}

/**
 * A mesh identity header is trustworthy only where nobody but the sidecar can reach the
 * listener: plaintext (the sidecar terminates mTLS), on loopback unless the operator says
 * otherwise; and plaintext is only safe when the caller's identity comes from that header.
 */
export function plaintextListenerProblems(s: PlaintextListenerSettings): string[] {
  const problems: string[] = [];
  const method = s.callerMethod;
  if (s.insecurePlaintext) {
    if (method && method.kind !== 'header')
      problems.push(
        `--insecure-plaintext requires a mesh identity header (--${method.flag}=header:…, istio or linkerd)`,
      );
    for (const { flag, host } of s.listeners) {
      if (!isLoopback(host) && !s.allowInsecureNonLoopback)
        problems.push(
          `--insecure-plaintext on --${flag}=${host} lets anyone who reaches the port forge identity headers; bind 127.0.0.1 behind the sidecar or pass --allow-insecure-non-loopback`,
        );
    }
  } else if (method?.kind === 'header') {
    problems.push(
      `a mesh identity header (--${method.flag}=header:…, istio or linkerd) is only trusted with --insecure-plaintext behind the sidecar`,
    );
  }
  return problems;
}

/** The warning for a plaintext listener the operator chose to expose beyond loopback. */
export function plaintextListenerWarnings(s: PlaintextListenerSettings): string[] {
  return s.insecurePlaintext && s.allowInsecureNonLoopback && s.listeners.some((l) => !isLoopback(l.host))
    ? [
        '--insecure-plaintext on a non-loopback address: anyone who reaches the port can forge identity headers',
      ]
    : [];
}
