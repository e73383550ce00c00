import { describe, expect, it } from 'vitest';
import {
  AuthMethodError,
  AuthMethodErrorCode,
  DEFAULT_AUTH_SPEC,
  parseAuthMethod,
  presetAuthSpec,
  UNPINNED_PRESET_SPECS,
} from '../src/index.js';

describe('parseAuthMethod', () => {
  it('parses mtls and its argocd-agent regex forms', () => {
    expect(parseAuthMethod('mtls')).toEqual({ kind: 'mtls', match: 'common-name', spec: 'mtls' });
    expect(parseAuthMethod(DEFAULT_AUTH_SPEC).kind).toBe('mtls');
    const subject = parseAuthMethod('mtls:CN=([^,]+)');
    expect(subject).toMatchObject({ kind: 'mtls', match: 'subject' });
    expect(subject.kind === 'mtls' && subject.match === 'subject' && subject.pattern.source).toBe(
      'CN=([^,]+)',
    );
    const uri = parseAuthMethod('mtls:uri:^spiffe://[^/]+/ns/[^/]+/sa/([^/]+)$');
    expect(uri).toMatchObject({ kind: 'mtls', match: 'uri' });
    expect(uri.kind === 'mtls' && uri.match === 'uri' && uri.pattern.source).toBe(
      '^spiffe:\\/\\/[^/]+\\/ns\\/[^/]+\\/sa\\/([^/]+)$',
    );
  });

  it("reads argocd-agent's explicit mtls:subject:<regex> as a regex on the subject, not 'subject:' as part of it", () => {
    const m = parseAuthMethod('mtls:subject:CN=([^,]+)');
    expect(m).toMatchObject({ kind: 'mtls', match: 'subject', spec: 'mtls:subject:CN=([^,]+)' });
    expect(m.kind === 'mtls' && m.match === 'subject' && m.pattern.source).toBe('CN=([^,]+)');
    expect(
      m.kind === 'mtls' && m.match !== 'common-name' && m.pattern.exec('CN=agent-a,O=Example')?.[1],
    ).toBe('agent-a');
    // The regex is still checked like any other: a capture group, and it must compile.
    expect(() => parseAuthMethod('mtls:subject:CN=.*')).toThrow(/capture group/);
    expect(() => parseAuthMethod('mtls:subject:')).toThrow(/empty regex/);
  });

  it('refuses userpass with a message that says what to use instead', () => {
    for (const spec of ['userpass:/app/config/creds/userpass.creds', 'userpass']) {
      let error: unknown;
      try {
        parseAuthMethod(spec);
      } catch (err) {
        error = err;
      }
      expect(error).toBeInstanceOf(AuthMethodError);
      expect((error as AuthMethodError).code).toBe(AuthMethodErrorCode.UNSUPPORTED);
      const message = (error as Error).message;
      expect(message).toContain('pullplane agent create');
      expect(message).toMatch(/use mtls .*token.*istio, linkerd or header/);
      // The credentials file path is not echoed.
      expect(message).not.toContain('/app/config/creds');
    }
  });

  it('refuses the istio and linkerd presets without a trust domain and namespaces', () => {
    for (const spec of ['istio', 'linkerd']) {
      for (const mesh of [
        undefined,
        { trustDomain: '', namespaces: ['argocd'] },
        { trustDomain: 'cluster.local', namespaces: [] },
        { trustDomain: 'cluster.local', namespaces: ['Bad_NS'] },
        { trustDomain: 'evil/x', namespaces: ['argocd'] },
      ]) {
        let error: unknown;
        try {
          parseAuthMethod(spec, { mesh });
        } catch (err) {
          error = err;
        }
        expect(error).toBeInstanceOf(AuthMethodError);
        expect((error as AuthMethodError).code).toBe(AuthMethodErrorCode.MESH_UNPINNED);
      }
    }
  });

  it('pins the presets to the trust domain and namespaces given', () => {
    const mesh = { trustDomain: 'cluster.local', namespaces: ['argocd', 'agents'] };
    const istio = parseAuthMethod('istio', { mesh });
    expect(istio).toMatchObject({
      kind: 'header',
      header: 'x-forwarded-client-cert',
      preset: 'istio',
      spec: 'istio',
      pinning: mesh,
    });
    expect(istio.kind === 'header' && istio.pattern.source).toBe(
      '^URI=spiffe:\\/\\/cluster\\.local\\/ns\\/(?:argocd|agents)\\/sa\\/([^/]+)$',
    );
    const linkerd = parseAuthMethod('linkerd', { mesh });
    expect(linkerd).toMatchObject({ kind: 'header', header: 'l5d-client-id', preset: 'linkerd' });
    expect(linkerd.kind === 'header' && linkerd.pattern.source).toBe(
      '^([^.]+)\\.(?:argocd|agents)\\.serviceaccount\\.identity\\.linkerd\\.cluster\\.local$',
    );
    expect(presetAuthSpec('istio', mesh)).toBe(
      'header:x-forwarded-client-cert:^URI=spiffe://cluster\\.local/ns/(?:argocd|agents)/sa/([^/]+)$',
    );
  });

  it("still accepts the guide's regexes when spelled out, as given", () => {
    const spelled = parseAuthMethod(UNPINNED_PRESET_SPECS.istio);
    expect(spelled.kind === 'header' && spelled.pattern.source).toBe(
      /^.*URI=spiffe:\/\/[^/]+\/ns\/[^/]+\/sa\/([^,;]+)/.source,
    );
    expect(spelled).not.toHaveProperty('preset');
    const linkerd = parseAuthMethod(UNPINNED_PRESET_SPECS.linkerd);
    expect(linkerd.kind === 'header' && linkerd.pattern.source).toBe('^([^.]+)\\..*');
  });

  it('splits header specs at the first two colons only', () => {
    const method = parseAuthMethod('header:X-Agent-ID:^id:([a-z0-9-]+):v1$');
    expect(method).toMatchObject({ kind: 'header', header: 'x-agent-id' });
    expect(method.kind === 'header' && method.pattern.exec('id:agent-a:v1')?.[1]).toBe('agent-a');
  });

  it('parses token', () => {
    expect(parseAuthMethod('token')).toEqual({ kind: 'token', spec: 'token' });
  });

  const invalid: Array<[string, AuthMethodErrorCode]> = [
    ['', AuthMethodErrorCode.UNKNOWN],
    ['bogus', AuthMethodErrorCode.UNKNOWN],
    ['MTLS', AuthMethodErrorCode.UNKNOWN],
    [' mtls', AuthMethodErrorCode.UNKNOWN],
    ['tokens', AuthMethodErrorCode.UNKNOWN],
    ['header', AuthMethodErrorCode.UNKNOWN],
    ['header:', AuthMethodErrorCode.INVALID_REGEX],
    ['header:x-agent', AuthMethodErrorCode.INVALID_REGEX],
    ['header:x-agent:', AuthMethodErrorCode.INVALID_REGEX],
    ['header::(.+)', AuthMethodErrorCode.INVALID_HEADER_NAME],
    ['header:bad name:(.+)', AuthMethodErrorCode.INVALID_HEADER_NAME],
    ['header:bad\nname:(.+)', AuthMethodErrorCode.INVALID_HEADER_NAME],
    ['header:x-agent:([a-z', AuthMethodErrorCode.INVALID_REGEX],
    ['header:x-agent:(?<', AuthMethodErrorCode.INVALID_REGEX],
    ['header:x-agent:^agent-a$', AuthMethodErrorCode.NO_CAPTURE_GROUP],
    ['header:x-agent:(?:agent)', AuthMethodErrorCode.NO_CAPTURE_GROUP],
    ['header:x-agent:\\(agent\\)', AuthMethodErrorCode.NO_CAPTURE_GROUP],
    ['mtls:', AuthMethodErrorCode.INVALID_REGEX],
    ['mtls:uri:', AuthMethodErrorCode.INVALID_REGEX],
    ['mtls:CN=[^,]+', AuthMethodErrorCode.NO_CAPTURE_GROUP],
    ['mtls:uri:[', AuthMethodErrorCode.INVALID_REGEX],
  ];
  it.each(invalid)('rejects %j with %s', (spec, code) => {
    let error: unknown;
    try {
      parseAuthMethod(spec);
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(AuthMethodError);
    expect((error as AuthMethodError).code).toBe(code);
    expect((error as AuthMethodError).message).toContain(JSON.stringify(spec));
  });

  it('counts named groups as capture groups', () => {
    expect(parseAuthMethod('header:x-agent:^(?<name>[a-z]+)$').kind).toBe('header');
  });
});
