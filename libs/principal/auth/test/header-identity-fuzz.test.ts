import { isDnsLabel } from '@pullplane/names';
import { describe, expect, it } from 'vitest';
import { extractHeaderIdentity, parseXfcc } from '../src/index.js';
import {
  headerMethod,
  ISTIO_AGENT_A,
  ISTIO_FORGED_THEN_REAL,
  ISTIO_VIA_INGRESS,
  LINKERD_AGENT_A,
  SEED_ISTIO,
  SEED_LINKERD,
} from './fixtures.js';
import { int, pick, prng } from './prng.js';

// Both the pinned presets and the seed's explicit expansions go through the same extraction.
const istios = [headerMethod('istio'), SEED_ISTIO] as const;
const linkerds = [headerMethod('linkerd'), SEED_LINKERD] as const;
const XFCC = 'x-forwarded-client-cert';
const L5D = 'l5d-client-id';

describe('extractHeaderIdentity: fuzz (seeded)', () => {
  const hostile = [
    ...',;="\\ \t\r\n\u0000\u007f/.:-_%аａé',
    'URI=',
    'By=',
    'Subject="',
    'sa/',
    'ns/',
    'spiffe://',
  ];

  function mutate(random: () => number, value: string): string {
    let out = value;
    for (let m = 0; m <= int(random, 4); m++) {
      const at = int(random, out.length + 1);
      switch (int(random, 5)) {
        case 0:
          out = out.slice(0, at) + pick(random, hostile) + out.slice(at);
          break;
        case 1:
          out = out.slice(0, at) + out.slice(at + 1 + int(random, 3));
          break;
        case 2:
          out = out.slice(0, at) + String.fromCharCode(int(random, 0x10000)) + out.slice(at + 1);
          break;
        case 3: {
          const from = int(random, out.length);
          out = out.slice(0, at) + out.slice(from, from + int(random, 30)) + out.slice(at);
          break;
        }
        default:
          out = out.slice(0, at) + String.fromCharCode(0x61 + int(random, 26)) + out.slice(at);
      }
    }
    return out;
  }

  /** The only way to an identity: a SPIFFE URI of the last element ending in /sa/<agent>. */
  function assertSoundXfcc(value: string, agent: string): void {
    const last = parseXfcc(value).at(-1);
    expect(last?.uri.some((uri) => uri.endsWith(`/sa/${agent}`) && uri.startsWith('spiffe://'))).toBe(true);
  }

  it.each(istios.map((m) => [m.spec, m] as const))(
    'mutated Istio headers yield only sound DNS-label identities (%s)',
    (_spec, istio) => {
      const random = prng(42);
      const seeds = [ISTIO_AGENT_A, ISTIO_FORGED_THEN_REAL, ISTIO_VIA_INGRESS];
      let accepted = 0;
      for (let n = 0; n < 4000; n++) {
        const value = mutate(random, pick(random, seeds));
        const result = extractHeaderIdentity(istio, { [XFCC]: value });
        if (result.ok) {
          accepted++;
          expect(isDnsLabel(result.identity.agent)).toBe(true);
          assertSoundXfcc(value, result.identity.agent);
          // A pinned preset never accepts another trust domain or namespace.
          if (istio.preset)
            expect(parseXfcc(value).at(-1)?.uri).toEqual([
              `spiffe://cluster.local/ns/argocd/sa/${result.identity.agent}`,
            ]);
        } else {
          expect(result.reason).toMatch(/^unable to extract identity: [\x20-\x7e]*$/);
        }
      }
      expect(accepted).toBeGreaterThan(0);
    },
  );

  it('random strings never throw and never yield a non-label identity', () => {
    const random = prng(7);
    for (let n = 0; n < 3000; n++) {
      let value = '';
      for (let i = int(random, 80); i > 0; i--) {
        value += random() < 0.6 ? String.fromCharCode(int(random, 256)) : pick(random, hostile);
      }
      for (const [method, name] of [
        ...istios.map((m) => [m, XFCC] as const),
        ...linkerds.map((m) => [m, L5D] as const),
      ]) {
        const result = extractHeaderIdentity(method, { [name]: value });
        if (result.ok) expect(isDnsLabel(result.identity.agent)).toBe(true);
        else expect(result.reason).toMatch(/^unable to extract identity: [\x20-\x7e]*$/);
      }
    }
  });

  it.each(linkerds.map((m) => [m.spec, m] as const))(
    'mutated Linkerd identities yield only the service account label (%s)',
    (_spec, linkerd) => {
      const random = prng(99);
      for (let n = 0; n < 3000; n++) {
        const value = mutate(random, LINKERD_AGENT_A);
        const result = extractHeaderIdentity(linkerd, { [L5D]: value });
        if (result.ok) {
          expect(isDnsLabel(result.identity.agent)).toBe(true);
          expect(value.startsWith(`${result.identity.agent}.`)).toBe(true);
          expect(value).toMatch(/\.serviceaccount\.identity\./);
          if (linkerd.preset)
            expect(value).toBe(
              `${result.identity.agent}.argocd.serviceaccount.identity.linkerd.cluster.local`,
            );
        }
      }
    },
  );
});
