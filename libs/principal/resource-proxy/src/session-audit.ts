const STREAM_PATH = /^\/api\/v1\/namespaces\/([^/?]+)\/pods\/([^/?]+)\/(exec|attach|portforward)(?:\?(.*))?$/;

/** What an exec, attach or port-forward session's audit line names, read from its request path. */
export interface SessionFields {
  session: 'exec' | 'attach' | 'portforward';
  namespace: string;
  pod: string;
  container?: string;
  command?: string[];
  ports?: string[];
}

/** The session an upgraded request's path opens, or undefined for any other path. */
export function sessionFields(path: string): SessionFields | undefined {
  const m = STREAM_PATH.exec(path);
  if (!m) return undefined;
  const decode = (s: string) => {
    try {
      return decodeURIComponent(s);
    } catch {
      return s;
    }
  };
  const kind = m[3] as SessionFields['session'];
  const query = new URLSearchParams(m[4] ?? '');
  const out: SessionFields = { session: kind, namespace: decode(m[1]!), pod: decode(m[2]!) };
  if (kind === 'portforward') out.ports = query.getAll('ports');
  else {
    const container = query.get('container');
    if (container) out.container = container;
    if (kind === 'exec') out.command = query.getAll('command');
  }
  return out;
}
