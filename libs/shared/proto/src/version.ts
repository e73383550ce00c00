import { ProtocolVersion } from './gen/pullplane/tunnel/v1/tunnel_pb.js';

export const PROTOCOL_VERSION_MIN = ProtocolVersion.PROTOCOL_VERSION_1;
export const PROTOCOL_VERSION_MAX = ProtocolVersion.PROTOCOL_VERSION_2;

/**
 * Picks the highest version both sides speak, or explains why there is none, naming both
 * ranges so an operator sees which side to upgrade.
 */
export function negotiateVersion(
  peerMin: number,
  peerMax: number,
): { ok: true; version: number } | { ok: false; message: string } {
  const high = Math.min(peerMax, PROTOCOL_VERSION_MAX);
  const low = Math.max(peerMin, PROTOCOL_VERSION_MIN);
  if (peerMin === 0 && peerMax === 0) {
    return { ok: false, message: 'peer did not announce a protocol version' };
  }
  if (high < low) {
    return {
      ok: false,
      message: `incompatible tunnel protocol: peer speaks v${range(peerMin, peerMax)}, this side speaks v${range(PROTOCOL_VERSION_MIN, PROTOCOL_VERSION_MAX)}`,
    };
  }
  return { ok: true, version: high };
}

function range(min: number, max: number): string {
  return min === max ? `${min}` : `${min}-${max}`;
}
