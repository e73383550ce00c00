const DNS_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

/**
 * RFC 1123 label as Kubernetes uses it for names: the only shape an agent name may take,
 * because it becomes part of resource names, NATS subjects, Redis keys and log fields.
 */
export function isDnsLabel(value: string): boolean {
  return value.length <= 63 && DNS_LABEL.test(value);
}

/**
 * The same rule over bytes `start..end` of a buffer, without decoding: the redis proxy checks
 * the agent part of every routed key on the hot path.
 */
export function isDnsLabelBytes(b: Uint8Array, start = 0, end = b.length): boolean {
  const n = end - start;
  if (n < 1 || n > 63) return false;
  for (let i = start; i < end; i++) {
    const c = b[i]!;
    const alnum = (c >= 0x61 && c <= 0x7a) || (c >= 0x30 && c <= 0x39);
    if (!alnum && (c !== 0x2d || i === start || i === end - 1)) return false;
  }
  return true;
}
