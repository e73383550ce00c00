const DNS_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

/**
 * RFC 1123 label as Kubernetes uses it for names: the only shape an agent name may take,
 * because it becomes part of resource names, NATS subjects and log fields downstream.
 */
export function isDnsLabel(value: string): boolean {
  return value.length <= 63 && DNS_LABEL.test(value);
}
