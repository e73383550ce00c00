/**
 * Whether only this host can reach a listener bound to `host`: the services refuse to listen
 * beyond loopback without authentication unless told to.
 */
export function isLoopback(host: string): boolean {
  const h = host.toLowerCase();
  return h === 'localhost' || h === '::1' || h === '[::1]' || /^127\.\d+\.\d+\.\d+$/.test(h);
}
