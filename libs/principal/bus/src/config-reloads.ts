import type { Bus } from './types.js';

/**
 * Calls `reload` on every `config-reload` control event meant for `service` (or for every
 * service, when it names none). Returns a function that stops it.
 */
export function onConfigReload(bus: Bus, service: string, reload: () => void): () => void {
  return bus.control.subscribe((ev) => {
    if (ev.type === 'config-reload' && (!ev.service || ev.service === service)) reload();
  });
}
