import { parseAccept, type ResponseFormat } from './http-io.js';
import { StatusError } from './status.js';

/**
 * Picks the response encoding from `Accept` the way the API server does, among the encodings the
 * fake can produce (JSON and YAML; YAML not for watches). Protobuf is never produced: a client that
 * also accepts JSON gets JSON, labelled as such; one that accepts nothing the fake can write gets
 * 406, the answer a real server gives for an encoding it lacks (custom resources have no protobuf).
 */
export function negotiateFormat(accept: string | undefined, opts: { watch: boolean }): ResponseFormat {
  const entries = parseAccept(accept).filter((e) => e.params.q === undefined || Number(e.params.q) > 0);
  if (entries.length === 0) return 'json';
  for (const e of entries) {
    if (e.type === 'application/json' || e.type === '*/*' || e.type === 'application/*') return 'json';
    if (e.type === 'application/yaml' && !opts.watch && e.params.as === undefined) return 'yaml';
  }
  const offered = opts.watch
    ? ['application/json', 'application/json;stream=watch']
    : ['application/json', 'application/yaml'];
  throw new StatusError(
    406,
    'NotAcceptable',
    `only the following media types are accepted: ${offered.join(', ')}`,
  );
}
