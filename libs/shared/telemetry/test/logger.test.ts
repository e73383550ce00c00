import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createLogger, LOG_LEVELS } from '../src/index.js';

function capture() {
  const lines: Record<string, unknown>[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _enc, cb) {
      for (const line of chunk.toString().split('\n').filter(Boolean)) lines.push(JSON.parse(line));
      cb();
    },
  });
  return { lines, destination };
}

describe('createLogger', () => {
  it('writes JSON with the app name, string levels and ISO time', () => {
    const { lines, destination } = capture();
    const log = createLogger({ level: 'info', name: 'stream-gateway', destination });
    log.info({ port: 8443 }, 'listening');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ level: 'info', name: 'stream-gateway', port: 8443, msg: 'listening' });
    expect(String(lines[0]?.time)).toMatch(/^\d{4}-\d{2}-\d{2}T/);
  });

  it('honours the level', () => {
    const { lines, destination } = capture();
    const log = createLogger({ level: 'warn', name: 'a', destination });
    log.info('dropped');
    log.debug('dropped');
    log.warn('kept');
    log.error('kept too');
    expect(lines.map((l) => l.level)).toEqual(['warn', 'error']);
    expect(LOG_LEVELS).toEqual(['trace', 'debug', 'info', 'warn', 'error']);
  });

  it('emits trace when asked', () => {
    const { lines, destination } = capture();
    createLogger({ level: 'trace', name: 'a', destination }).trace('deep');
    expect(lines[0]?.level).toBe('trace');
  });

  it('replaces pino base fields with the given ones', () => {
    const { lines, destination } = capture();
    createLogger({ level: 'info', name: 'a', base: { version: '1.2.3' }, destination }).info('x');
    expect(lines[0]).toMatchObject({ name: 'a', version: '1.2.3' });
    expect(lines[0]).not.toHaveProperty('pid');
  });

  it('redacts credentials at any usual depth', () => {
    const { lines, destination } = capture();
    const log = createLogger({ level: 'info', name: 'a', destination, redact: ['custom.field'] });
    log.info(
      {
        authorization: 'Bearer abc',
        password: 'p1',
        token: 't1',
        req: { headers: { authorization: 'Bearer def', cookie: 'sid=1', 'set-cookie': 'sid=2', host: 'h' } },
        creds: { accessToken: 'a1', refresh_token: 'r1', clientSecret: 'c1', apiKey: 'k1' },
        err: { config: { headers: { Authorization: 'Bearer deep' } } },
        custom: { field: 'x' },
      },
      'request',
    );
    const text = JSON.stringify(lines[0]);
    for (const secret of [
      'abc',
      'p1',
      't1',
      'def',
      'sid=1',
      'sid=2',
      'a1',
      'r1',
      'c1',
      'k1',
      'deep',
      '"x"',
    ]) {
      expect(text).not.toContain(secret);
    }
    expect(lines[0]).toMatchObject({ req: { headers: { host: 'h', authorization: '[Redacted]' } } });
  });

  it('redacts credentials in base fields', () => {
    const { lines, destination } = capture();
    const log = createLogger({ level: 'info', name: 'a', base: { apiKey: 'k' }, destination });
    log.info({ agent: 'x' }, 'm');
    expect(lines[0]).toMatchObject({ agent: 'x', apiKey: '[Redacted]' });
  });

  it('serializes errors', () => {
    const { lines, destination } = capture();
    createLogger({ level: 'info', name: 'a', destination }).error({ err: new Error('kaput') }, 'failed');
    expect(lines[0]).toMatchObject({ err: { type: 'Error', message: 'kaput' } });
    expect(String((lines[0]?.err as { stack?: string } | undefined)?.stack)).toContain('kaput');
  });

  it('child loggers carry agent and requestId', () => {
    const { lines, destination } = capture();
    const log = createLogger({ level: 'info', name: 'resource-proxy', destination });
    log.child({ agent: 'cluster-a', requestId: 'r-1' }).info('proxied');
    log.child({ agent: 'cluster-b' }).info('no request');
    expect(lines[0]).toMatchObject({ name: 'resource-proxy', agent: 'cluster-a', requestId: 'r-1' });
    expect(lines[1]).toMatchObject({ agent: 'cluster-b' });
    expect(lines[1]).not.toHaveProperty('requestId');
  });
});
