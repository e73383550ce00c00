import WebSocket from 'ws';

/** A cluster Secret as Argo CD stores one: `server` and `config` (JSON), base64 in `data`. */
export interface ArgoClusterSecret {
  data?: Record<string, string> | undefined;
}

interface ClusterConfig {
  bearerToken?: string;
  tlsClientConfig?: { insecure?: boolean; caData?: string; certData?: string; keyData?: string };
}

export interface ArgoTerminalOptions {
  namespace: string;
  pod: string;
  container?: string;
  /** What the terminal runs (Argo CD tries its allowed shells; default `sh`). */
  command?: string[];
  /** Sent as Impersonate-User, as Argo CD does with impersonation on. */
  impersonate?: string;
}

/** The terminal's session: what it showed, and how it ended. */
export interface ArgoTerminal {
  /** Keystrokes (channel 0). */
  type(keys: string): void;
  /** A terminal size change (channel 4), as the browser's xterm reports it. */
  resize(cols: number, rows: number): void;
  /** Everything the terminal showed (channels 1 and 2). */
  shown(): string;
  /** The Status on channel 3 (the exit), once it came. */
  status(): { status: string; reason?: string; details?: unknown } | undefined;
  /** The protocol the server chose. */
  readonly protocol: string;
  /** Resolves when the connection closes. */
  closed: Promise<void>;
  close(): void;
}

/**
 * A stand-in for Argo CD's web terminal that needs no Go: what argocd-server's terminal
 * handler does for a browser, done with a cluster Secret's credentials — an exec of a shell
 * with stdin, stdout, stderr and a TTY, upgraded to WebSocket with `v5.channel.k8s.io` (then
 * `v4`), keystrokes on channel 0 and the terminal size on channel 4. Rejects with the server's
 * status code and body when it refuses the upgrade.
 */
export function openArgoTerminal(secret: ArgoClusterSecret, o: ArgoTerminalOptions): Promise<ArgoTerminal> {
  const field = (k: string) => Buffer.from(secret.data?.[k] ?? '', 'base64').toString('utf8');
  const server = field('server').replace(/\/+$/, '');
  const config = JSON.parse(field('config') || '{}') as ClusterConfig;
  const tls = config.tlsClientConfig ?? {};
  const pem = (b64?: string) => (b64 ? Buffer.from(b64, 'base64').toString('utf8') : undefined);
  const url = new URL(server);
  url.protocol = url.protocol === 'http:' ? 'ws:' : 'wss:';
  const query = new URLSearchParams();
  if (o.container) query.set('container', o.container);
  for (const c of o.command ?? ['sh']) query.append('command', c);
  for (const k of ['stdin', 'stdout', 'stderr', 'tty']) query.set(k, 'true');
  // The cluster URL may carry a path (`/clusters/<agent>`) or a query (`?agentName=`).
  const base = url.pathname.replace(/\/+$/, '');
  const extra = url.search.slice(1);
  const target = `${url.protocol}//${url.host}${base}/api/v1/namespaces/${encodeURIComponent(o.namespace)}/pods/${encodeURIComponent(o.pod)}/exec?${query}${extra ? `&${extra}` : ''}`;
  const ws = new WebSocket(target, ['v5.channel.k8s.io', 'v4.channel.k8s.io'], {
    headers: {
      ...(config.bearerToken ? { authorization: `Bearer ${config.bearerToken}` } : {}),
      ...(o.impersonate ? { 'impersonate-user': o.impersonate } : {}),
    },
    ...(pem(tls.caData) ? { ca: pem(tls.caData) } : {}),
    ...(pem(tls.certData) ? { cert: pem(tls.certData), key: pem(tls.keyData) } : {}),
    rejectUnauthorized: !tls.insecure,
    perMessageDeflate: false,
  });
  let shown = '';
  let status: ReturnType<ArgoTerminal['status']>;
  ws.on('message', (data: Buffer) => {
    const channel = data[0];
    const payload = data.subarray(1).toString('utf8');
    if (channel === 1 || channel === 2) shown += payload;
    else if (channel === 3) status = JSON.parse(payload) as typeof status;
  });
  const closed = new Promise<void>((resolve) => ws.once('close', () => resolve()));
  const send = (channel: number, body: string) =>
    ws.send(Buffer.concat([Buffer.from([channel]), Buffer.from(body, 'utf8')]));
  return new Promise((resolve, reject) => {
    ws.once('unexpected-response', (_req, res) => {
      const parts: Buffer[] = [];
      res.on('data', (c: Buffer) => parts.push(c));
      res.on('end', () =>
        reject(
          Object.assign(new Error(`the server refused the terminal: ${res.statusCode}`), {
            statusCode: res.statusCode,
            body: Buffer.concat(parts).toString('utf8'),
          }),
        ),
      );
    });
    ws.once('error', reject);
    ws.once('open', () =>
      resolve({
        type: (keys) => send(0, keys),
        resize: (cols, rows) => send(4, JSON.stringify({ Width: cols, Height: rows })),
        shown: () => shown,
        status: () => status,
        protocol: ws.protocol,
        closed,
        close: () => ws.close(),
      }),
    );
  });
}
