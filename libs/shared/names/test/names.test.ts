import { describe, expect, it } from 'vitest';
import {
  isDnsLabel,
  isDnsLabelBytes,
  isLoopback,
  isStrippedBackendResponseHeader,
  isStrippedRequestHeader,
  isStrippedResponseHeader,
} from '../src/index.js';

describe('isDnsLabel', () => {
  it('accepts RFC 1123 labels and refuses everything else', () => {
    for (const ok of ['a', 'east', 'east-1', '0', 'a'.repeat(63)]) expect(isDnsLabel(ok), ok).toBe(true);
    for (const bad of ['', 'East', '-east', 'east-', 'ea_st', 'ea.st', 'a'.repeat(64), 'east\n'])
      expect(isDnsLabel(bad), JSON.stringify(bad)).toBe(false);
  });

  it('gives the same answer over bytes, for any slice of a buffer', () => {
    const alphabet = 'ab9-_.Z|\n';
    let seed = 7;
    const next = () => {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      return seed;
    };
    for (let n = 0; n < 5000; n++) {
      const len = next() % 70;
      let s = '';
      for (let i = 0; i < len; i++) s += alphabet[next() % alphabet.length];
      const framed = Buffer.from(`x|${s}_y`, 'latin1');
      expect(isDnsLabelBytes(framed, 2, 2 + s.length), JSON.stringify(s)).toBe(isDnsLabel(s));
      expect(isDnsLabelBytes(Buffer.from(s, 'latin1'))).toBe(isDnsLabel(s));
    }
  });
});

describe('isLoopback', () => {
  it('knows the loopback names and addresses, nothing else', () => {
    for (const h of ['localhost', 'LOCALHOST', '127.0.0.1', '127.1.2.3', '::1', '[::1]'])
      expect(isLoopback(h), h).toBe(true);
    for (const h of ['0.0.0.0', '::', '10.0.0.1', 'localhost.example.com', '128.0.0.1', ''])
      expect(isLoopback(h), h).toBe(false);
  });
});

describe('header names that never cross a hop', () => {
  it('strips hop-by-hop, host, credentials and identity headers from requests', () => {
    for (const h of [
      'connection',
      'keep-alive',
      'transfer-encoding',
      'upgrade',
      'te',
      'proxy-authorization',
      'host',
      'authorization',
      'cookie',
      'x-remote-user',
      'x-remote-group',
      'x-remote-extra-scopes',
      'x-forwarded-client-cert',
      'l5d-client-id',
      // Trace context crosses the tunnel in Open, never as a header copy.
      'traceparent',
      'tracestate',
    ])
      expect(isStrippedRequestHeader(h), h).toBe(true);
    for (const h of ['accept', 'content-type', 'content-length', 'impersonate-user', 'x-request-id'])
      expect(isStrippedRequestHeader(h), h).toBe(false);
  });

  it('strips only hop-by-hop headers from responses', () => {
    expect(isStrippedResponseHeader('transfer-encoding')).toBe(true);
    expect(isStrippedResponseHeader('connection')).toBe(true);
    expect(isStrippedResponseHeader('content-type')).toBe(false);
    expect(isStrippedResponseHeader('set-cookie')).toBe(false);
  });

  it('strips hop-by-hop headers and set-cookie from backend responses', () => {
    for (const h of ['transfer-encoding', 'connection', 'keep-alive', 'upgrade', 'set-cookie'])
      expect(isStrippedBackendResponseHeader(h), h).toBe(true);
    for (const h of ['content-type', 'content-length', 'cache-control', 'www-authenticate'])
      expect(isStrippedBackendResponseHeader(h), h).toBe(false);
  });
});
