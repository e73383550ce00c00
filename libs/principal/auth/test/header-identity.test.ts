import { once } from 'node:events';
import http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import { Metadata } from '@grpc/grpc-js';
import { describe, expect, it } from 'vitest';
import {
  extractHeaderIdentity,
  type HeaderAuthMethod,
  type HeaderBag,
  headersFromGrpcMetadata,
  IdentityErrorCode,
  type RejectionCode,
  XfccErrorCode,
} from '../src/index.js';
import {
  HASH_A,
  headerMethod,
  ISTIO_AGENT_A,
  ISTIO_FORGED_THEN_REAL,
  ISTIO_VIA_INGRESS,
  istioElement,
  LINKERD_AGENT_A,
  PRINCIPAL,
  SEED_ISTIO,
  SEED_LINKERD,
  spiffe,
} from './fixtures.js';

// The extraction rules are exercised with the seed's explicit expansions (still accepted as
// --auth=header:…); the pinned presets get their own cases below and must refuse all of these too.
const istio = SEED_ISTIO;
const linkerd = SEED_LINKERD;
const XFCC = 'x-forwarded-client-cert';
const L5D = 'l5d-client-id';

describe('extractHeaderIdentity: accepted', () => {
  it('takes the agent from an Istio sidecar element', () => {
    expect(extractHeaderIdentity(istio, { [XFCC]: ISTIO_AGENT_A })).toEqual({
      ok: true,
      identity: { agent: 'agent-a', via: 'header', evidence: spiffe('agent-a') },
    });
  });

  it('uses only the last element of an APPEND_FORWARD chain', () => {
    const forged = extractHeaderIdentity(istio, { [XFCC]: ISTIO_FORGED_THEN_REAL });
    expect(forged.ok && forged.identity.agent).toBe('agent-a');
    const viaIngress = extractHeaderIdentity(istio, { [XFCC]: ISTIO_VIA_INGRESS });
    expect(viaIngress.ok && viaIngress.identity.agent).toBe('istio-ingressgateway-service-account');
  });

  it('finds the header under any key case and as a one-item list', () => {
    expect(extractHeaderIdentity(istio, { 'X-Forwarded-Client-Cert': ISTIO_AGENT_A }).ok).toBe(true);
    expect(extractHeaderIdentity(istio, { [XFCC]: [ISTIO_AGENT_A], other: undefined }).ok).toBe(true);
  });

  it('is not fooled by an escaped quote in Subject before the real URI', () => {
    const value = `By=${PRINCIPAL};Hash=${HASH_A};Subject="CN=x\\";URI=${spiffe('evil')}";URI=${spiffe('agent-a')}`;
    const result = extractHeaderIdentity(istio, { [XFCC]: value });
    expect(result.ok && result.identity.agent).toBe('agent-a');
  });

  it('takes the agent from a Linkerd identity, preset or spelled out', () => {
    expect(extractHeaderIdentity(linkerd, { [L5D]: LINKERD_AGENT_A })).toEqual({
      ok: true,
      identity: { agent: 'agent-a', via: 'header', evidence: LINKERD_AGENT_A },
    });
    const spelled = headerMethod('header:l5d-client-id:^([^.]+)\\..*');
    const result = extractHeaderIdentity(spelled, {
      'L5D-Client-Id': 'agent-b.team-x.serviceaccount.identity.mesh.example',
    });
    expect(result.ok && result.identity.agent).toBe('agent-b');
  });

  it('supports a custom header with a colon in its regex', () => {
    const method = headerMethod('header:x-agent-id:^agent:([a-z0-9-]+)$');
    const result = extractHeaderIdentity(method, { 'x-agent-id': 'agent:agent-a' });
    expect(result.ok && result.identity.agent).toBe('agent-a');
  });
});

describe('extractHeaderIdentity: hostile values', () => {
  const emptyCapture = headerMethod('header:x-agent-id:^agent=([a-z0-9-]*)$');
  const spliced = (sa: string) =>
    `By=${PRINCIPAL};Hash=${HASH_A};Subject="";URI=spiffe://cluster.local/ns/argocd/sa/${sa}`;
  type Case = [name: string, method: HeaderAuthMethod, headers: HeaderBag, code: RejectionCode];
  const cases: Case[] = [
    ['missing header', istio, {}, IdentityErrorCode.HEADER_MISSING],
    ['undefined header value', istio, { [XFCC]: undefined }, IdentityErrorCode.HEADER_MISSING],
    ['missing l5d header', linkerd, { [XFCC]: ISTIO_AGENT_A }, IdentityErrorCode.HEADER_MISSING],
    ['repeated header', istio, { [XFCC]: [ISTIO_AGENT_A, ISTIO_AGENT_A] }, IdentityErrorCode.HEADER_REPEATED],
    [
      'repeated under two key spellings',
      istio,
      { [XFCC]: ISTIO_AGENT_A, 'X-Forwarded-Client-Cert': spliced('evil') },
      IdentityErrorCode.HEADER_REPEATED,
    ],
    [
      'two XFCC headers folded by the transport',
      istio,
      { [XFCC]: `${spliced('evil')}, ${ISTIO_AGENT_A}` },
      XfccErrorCode.UNEXPECTED_CHARACTER,
    ],
    [
      'repeated l5d header',
      linkerd,
      { [L5D]: [LINKERD_AGENT_A, LINKERD_AGENT_A] },
      IdentityErrorCode.HEADER_REPEATED,
    ],
    [
      'l5d headers folded by the transport',
      linkerd,
      { [L5D]: `${LINKERD_AGENT_A}, evil.argocd.serviceaccount.identity.linkerd.cluster.local` },
      IdentityErrorCode.HEADER_REPEATED,
    ],
    ['empty header value', istio, { [XFCC]: '' }, IdentityErrorCode.HEADER_EMPTY],
    ['empty l5d value', linkerd, { [L5D]: '' }, IdentityErrorCode.HEADER_EMPTY],
    [
      'quoted Subject faking a URI',
      istio,
      { [XFCC]: `By=${PRINCIPAL};Hash=${HASH_A};Subject="CN=x;URI=${spiffe('evil')}"` },
      IdentityErrorCode.XFCC_NO_URI,
    ],
    [
      'Subject faking a URI next to a non-SPIFFE URI',
      istio,
      { [XFCC]: `Subject="URI=${spiffe('evil')}";URI=https://example.com/agent-a` },
      IdentityErrorCode.NO_MATCH,
    ],
    ['By= only', istio, { [XFCC]: `By=${spiffe('evil')}` }, IdentityErrorCode.XFCC_NO_URI],
    [
      'By= carrying the SPIFFE ID, URI elsewhere',
      istio,
      { [XFCC]: `By=${spiffe('evil')};URI=https://example.com/x` },
      IdentityErrorCode.NO_MATCH,
    ],
    [
      'URI only in an earlier element',
      istio,
      { [XFCC]: `URI=${spiffe('evil')},By=${PRINCIPAL};Hash=${HASH_A};Subject=""` },
      IdentityErrorCode.XFCC_NO_URI,
    ],
    [
      'escaped quote hiding a URI inside Subject',
      istio,
      { [XFCC]: `By=${PRINCIPAL};Subject="x\\";URI=${spiffe('evil')}"` },
      IdentityErrorCode.XFCC_NO_URI,
    ],
    [
      'escaped quote leaving the quote open',
      istio,
      { [XFCC]: `Subject="abc\\";URI=${spiffe('agent-a')}` },
      XfccErrorCode.UNTERMINATED_QUOTE,
    ],
    [
      'unterminated quote',
      istio,
      { [XFCC]: `By=${PRINCIPAL};Subject="CN=agent-a;URI=${spiffe('agent-a')}` },
      XfccErrorCode.UNTERMINATED_QUOTE,
    ],
    [
      'empty capture: sa/ then ;',
      istio,
      { [XFCC]: `URI=spiffe://cluster.local/ns/argocd/sa/;Hash=${HASH_A}` },
      IdentityErrorCode.NO_MATCH,
    ],
    [
      'empty capture with a pattern allowing it',
      emptyCapture,
      { 'x-agent-id': 'agent=' },
      IdentityErrorCode.EMPTY_CAPTURE,
    ],
    ['uppercase name', istio, { [XFCC]: spliced('Agent-A') }, IdentityErrorCode.INVALID_AGENT_NAME],
    ['underscore name', istio, { [XFCC]: spliced('agent_a') }, IdentityErrorCode.INVALID_AGENT_NAME],
    ['dotted name', istio, { [XFCC]: spliced('agent.a') }, IdentityErrorCode.INVALID_AGENT_NAME],
    ['leading hyphen', istio, { [XFCC]: spliced('-agent') }, IdentityErrorCode.INVALID_AGENT_NAME],
    ['trailing hyphen', istio, { [XFCC]: spliced('agent-') }, IdentityErrorCode.INVALID_AGENT_NAME],
    ['64-character name', istio, { [XFCC]: spliced('a'.repeat(64)) }, IdentityErrorCode.INVALID_AGENT_NAME],
    [
      'path after the service account',
      istio,
      { [XFCC]: spliced('agent-a/extra') },
      IdentityErrorCode.INVALID_AGENT_NAME,
    ],
    ['percent-encoded name', istio, { [XFCC]: spliced('agent%2Da') }, IdentityErrorCode.INVALID_AGENT_NAME],
    [
      'percent-encoded slash',
      istio,
      { [XFCC]: spliced('x%2F..%2Fagent-a') },
      IdentityErrorCode.INVALID_AGENT_NAME,
    ],
    [
      'CRLF header injection',
      istio,
      { [XFCC]: `${ISTIO_AGENT_A}\r\nx-evil: 1` },
      IdentityErrorCode.HEADER_CONTROL_CHARACTER,
    ],
    [
      'bare LF',
      istio,
      { [XFCC]: `${spliced('agent-a')}\nURI=${spiffe('evil')}` },
      IdentityErrorCode.HEADER_CONTROL_CHARACTER,
    ],
    [
      'NUL after the name',
      istio,
      { [XFCC]: `${spliced('agent-a')}\u0000evil` },
      IdentityErrorCode.HEADER_CONTROL_CHARACTER,
    ],
    ['tab', istio, { [XFCC]: `${ISTIO_AGENT_A}\t` }, IdentityErrorCode.HEADER_CONTROL_CHARACTER],
    [
      'DEL',
      linkerd,
      { [L5D]: `agent-a\u007f.argocd.serviceaccount.identity.linkerd.cluster.local` },
      IdentityErrorCode.HEADER_CONTROL_CHARACTER,
    ],
    ['CR in l5d', linkerd, { [L5D]: `${LINKERD_AGENT_A}\r` }, IdentityErrorCode.HEADER_CONTROL_CHARACTER],
    ['Cyrillic a look-alike', istio, { [XFCC]: spliced('\u0430gent-a') }, IdentityErrorCode.HEADER_NON_ASCII],
    ['fullwidth look-alike', istio, { [XFCC]: spliced('\uff41gent-a') }, IdentityErrorCode.HEADER_NON_ASCII],
    [
      'Cyrillic in l5d',
      linkerd,
      { [L5D]: `\u0430gent-a.argocd.serviceaccount.identity.linkerd.cluster.local` },
      IdentityErrorCode.HEADER_NON_ASCII,
    ],
    ['Latin-1 byte', istio, { [XFCC]: spliced('agent-\u00e1') }, IdentityErrorCode.HEADER_NON_ASCII],
    [
      'oversized XFCC',
      istio,
      { [XFCC]: `${ISTIO_AGENT_A};Cert="${'A'.repeat(16 * 1024)}"` },
      IdentityErrorCode.HEADER_TOO_LONG,
    ],
    [
      'oversized l5d',
      linkerd,
      { [L5D]: `agent-a.argocd.serviceaccount.identity.${'a'.repeat(8 * 1024)}` },
      IdentityErrorCode.HEADER_TOO_LONG,
    ],
    [
      'oversized XFCC value',
      istio,
      { [XFCC]: `${ISTIO_AGENT_A};Cert="${'A'.repeat(9 * 1024)}"` },
      XfccErrorCode.VALUE_TOO_LONG,
    ],
    ['leading whitespace', istio, { [XFCC]: ` ${ISTIO_AGENT_A}` }, IdentityErrorCode.HEADER_MALFORMED],
    ['trailing whitespace', istio, { [XFCC]: `${ISTIO_AGENT_A} ` }, IdentityErrorCode.HEADER_MALFORMED],
    [
      'whitespace around ;',
      istio,
      { [XFCC]: `By=${PRINCIPAL}; URI=${spiffe('agent-a')}` },
      XfccErrorCode.UNEXPECTED_CHARACTER,
    ],
    ['padded l5d', linkerd, { [L5D]: ` ${LINKERD_AGENT_A}` }, IdentityErrorCode.HEADER_MALFORMED],
    [
      'trailing garbage after a URI',
      istio,
      { [XFCC]: `${ISTIO_AGENT_A}"junk` },
      XfccErrorCode.UNEXPECTED_CHARACTER,
    ],
    [
      'trailing garbage after a quote',
      istio,
      { [XFCC]: `By=${PRINCIPAL};Subject=""junk;URI=${spiffe('agent-a')}` },
      XfccErrorCode.UNEXPECTED_CHARACTER,
    ],
    ['trailing semicolon', istio, { [XFCC]: `${ISTIO_AGENT_A};` }, XfccErrorCode.EMPTY_PAIR],
    ['trailing comma', istio, { [XFCC]: `${ISTIO_AGENT_A},` }, XfccErrorCode.EMPTY_ELEMENT],
    [
      'second URI smuggled in a quoted value',
      istio,
      { [XFCC]: `URI="${spiffe('x')};URI=${spiffe('evil')}"` },
      IdentityErrorCode.HEADER_MALFORMED,
    ],
    [
      'comma smuggled in a quoted URI',
      istio,
      { [XFCC]: `URI="${spiffe('agent-a')},evil"` },
      IdentityErrorCode.HEADER_MALFORMED,
    ],
    [
      'duplicate Subject',
      istio,
      { [XFCC]: `Subject="a";Subject="b";URI=${spiffe('agent-a')}` },
      XfccErrorCode.DUPLICATE_KEY,
    ],
    [
      'non-SPIFFE URI',
      istio,
      { [XFCC]: `By=${PRINCIPAL};URI=https://evil.example/ns/argocd/sa/agent-a` },
      IdentityErrorCode.NO_MATCH,
    ],
    ['l5d value that is just agent-a', linkerd, { [L5D]: 'agent-a' }, IdentityErrorCode.NO_MATCH],
    [
      'l5d value without the identity suffix',
      linkerd,
      { [L5D]: 'agent-a.argocd' },
      IdentityErrorCode.HEADER_MALFORMED,
    ],
    [
      'l5d value with a different suffix',
      linkerd,
      { [L5D]: 'agent-a.argocd.svc.cluster.local' },
      IdentityErrorCode.HEADER_MALFORMED,
    ],
    [
      'l5d value with an empty namespace',
      linkerd,
      { [L5D]: 'agent-a..serviceaccount.identity.linkerd.cluster.local' },
      IdentityErrorCode.HEADER_MALFORMED,
    ],
    [
      'l5d uppercase name',
      linkerd,
      { [L5D]: 'Agent-A.argocd.serviceaccount.identity.linkerd.cluster.local' },
      IdentityErrorCode.INVALID_AGENT_NAME,
    ],
    [
      'l5d underscore name',
      linkerd,
      { [L5D]: 'agent_a.argocd.serviceaccount.identity.linkerd.cluster.local' },
      IdentityErrorCode.INVALID_AGENT_NAME,
    ],
    [
      'l5d starting with a dot',
      linkerd,
      { [L5D]: '.argocd.serviceaccount.identity.linkerd.cluster.local' },
      IdentityErrorCode.NO_MATCH,
    ],
    [
      'l5d value carrying XFCC',
      linkerd,
      { [L5D]: `URI=${spiffe('agent-a')}` },
      IdentityErrorCode.INVALID_AGENT_NAME,
    ],
  ];

  it('keeps at least 25 hostile cases in the corpus', () => {
    expect(cases.length).toBeGreaterThanOrEqual(25);
  });

  it.each(cases)('%s', (_name, method, headers, code) => {
    const result = extractHeaderIdentity(method, headers);
    expect(result).toMatchObject({ ok: false, code });
    if (!result.ok) {
      expect(result.reason).toMatch(/^unable to extract identity: /);
      // Reasons go to logs: they must not carry raw control or non-ASCII characters.
      expect(result.reason).toMatch(/^[\x20-\x7e]*$/);
    }
  });

  it('is refused by the pinned presets as well, whatever the code', () => {
    const pinned = { istio: headerMethod('istio'), linkerd: headerMethod('linkerd') };
    for (const [name, method, headers] of cases) {
      const preset = method === istio ? pinned.istio : method === linkerd ? pinned.linkerd : undefined;
      if (preset) expect(extractHeaderIdentity(preset, headers).ok, name).toBe(false);
    }
  });

  it('writes log-friendly reasons', () => {
    expect(extractHeaderIdentity(istio, {})).toEqual({
      ok: false,
      code: 'AUTH_HEADER_MISSING',
      reason: 'unable to extract identity: header x-forwarded-client-cert is missing',
    });
    const bad = extractHeaderIdentity(istio, { [XFCC]: spliced('Agent_A') });
    expect(!bad.ok && bad.reason).toContain('"Agent_A"');
  });
});

describe('ambiguous XFCC elements', () => {
  // An element with two URIs used to yield whichever matched first: the order decided.
  const twoUris = (first: string, second: string) =>
    `By=${PRINCIPAL};Hash=${HASH_A};Subject="";URI=${spiffe(first)};URI=${spiffe(second)}`;
  it.each([
    ['agent-a first', twoUris('agent-a', 'evil')],
    ['evil first', twoUris('evil', 'agent-a')],
    ['a non-SPIFFE URI first', `By=${PRINCIPAL};URI=https://example.com/x;URI=${spiffe('agent-a')}`],
  ])('refuses an element with several URIs (%s)', (_what, value) => {
    for (const method of [istio, headerMethod('istio')]) {
      const result = extractHeaderIdentity(method, { [XFCC]: value });
      expect(result).toMatchObject({ ok: false, code: IdentityErrorCode.XFCC_AMBIGUOUS });
      expect(!result.ok && result.reason).toMatch(/carries \d URIs .*exactly one is required/);
    }
  });

  it('still takes the one URI of an element that has a single one', () => {
    expect(extractHeaderIdentity(headerMethod('istio'), { [XFCC]: ISTIO_AGENT_A })).toMatchObject({
      ok: true,
      identity: { agent: 'agent-a' },
    });
  });
});

describe('pinned mesh presets', () => {
  const istioPinned = headerMethod('istio', {
    trustDomain: 'cluster.local',
    namespaces: ['agents', 'argocd'],
  });
  const linkerdPinned = headerMethod('linkerd', { trustDomain: 'cluster.local', namespaces: ['agents'] });
  const l5d = (sa: string, ns: string, td = 'cluster.local') =>
    `${sa}.${ns}.serviceaccount.identity.linkerd.${td}`;

  it('accepts service accounts of the pinned namespaces in the pinned trust domain', () => {
    for (const ns of ['agents', 'argocd']) {
      expect(
        extractHeaderIdentity(istioPinned, { [XFCC]: `By=${PRINCIPAL};URI=${spiffe('agent-a', ns)}` }),
      ).toMatchObject({ ok: true, identity: { agent: 'agent-a' } });
    }
    expect(extractHeaderIdentity(linkerdPinned, { [L5D]: l5d('agent-a', 'agents') })).toMatchObject({
      ok: true,
      identity: { agent: 'agent-a' },
    });
  });

  it.each([
    ['another trust domain', spiffe('agent-a', 'agents', 'evil.example')],
    ['another namespace', spiffe('default', 'kube-system')],
    ['a namespace that only starts like a pinned one', spiffe('agent-a', 'agents-evil')],
    ['a trust domain that only ends like the pinned one', spiffe('agent-a', 'agents', 'x.cluster.local')],
    ['a trust domain with a dot wildcard', spiffe('agent-a', 'agents', 'clusterxlocal')],
    ['a path after the service account', `${spiffe('agent-a', 'agents')}/x`],
  ])('Istio: refuses %s', (_what, uri) => {
    expect(extractHeaderIdentity(istioPinned, { [XFCC]: `By=${PRINCIPAL};URI=${uri}` })).toMatchObject({
      ok: false,
      code: IdentityErrorCode.NO_MATCH,
    });
    // The seed's expansion accepts what the pinned preset refuses (the reported hole).
    if (!uri.endsWith('/x')) expect(extractHeaderIdentity(istio, { [XFCC]: `URI=${uri}` }).ok).toBe(true);
  });

  it.each([
    ['another namespace', l5d('default', 'kube-system')],
    ['another trust domain', l5d('agent-a', 'agents', 'evil.example')],
    ['a namespace that only starts like the pinned one', l5d('agent-a', 'agents-evil')],
  ])('Linkerd: refuses %s', (_what, value) => {
    expect(extractHeaderIdentity(linkerdPinned, { [L5D]: value })).toMatchObject({
      ok: false,
      code: IdentityErrorCode.NO_MATCH,
    });
    expect(extractHeaderIdentity(linkerd, { [L5D]: value }).ok).toBe(true);
  });
});

describe('headersFromGrpcMetadata', () => {
  it('keeps every value of a repeated key and skips binary entries', () => {
    const md = new Metadata();
    md.add(L5D, LINKERD_AGENT_A);
    md.add(L5D, 'evil.argocd.serviceaccount.identity.linkerd.cluster.local');
    md.add('trace-bin', Buffer.from([1, 2, 3]));
    const headers = headersFromGrpcMetadata(md);
    expect(headers[L5D]).toHaveLength(2);
    expect(Object.hasOwn(headers, 'trace-bin')).toBe(false);
    expect(extractHeaderIdentity(linkerd, headers)).toMatchObject({
      ok: false,
      code: 'AUTH_HEADER_REPEATED',
    });

    const single = new Metadata();
    single.set(XFCC, ISTIO_AGENT_A);
    expect(extractHeaderIdentity(istio, headersFromGrpcMetadata(single))).toMatchObject({ ok: true });
  });

  it('rejects headers a real HTTP/2 request sent twice', async () => {
    const server = http2.createServer();
    const seen = new Promise<Metadata>((resolve) => {
      server.on('stream', (stream, headers) => {
        resolve(Metadata.fromHttp2Headers(headers));
        stream.respond({ ':status': 200 });
        stream.end();
      });
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const client = http2.connect(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
    try {
      const request = client.request({
        ':path': '/',
        [XFCC]: [istioElement('evil'), ISTIO_AGENT_A],
        [L5D]: ['evil.argocd.serviceaccount.identity.linkerd.cluster.local', LINKERD_AGENT_A],
      });
      request.end();
      const headers = headersFromGrpcMetadata(await seen);
      // Node folds duplicates into "a, b"; neither may pass as one identity.
      expect(extractHeaderIdentity(istio, headers)).toMatchObject({
        ok: false,
        code: 'XFCC_UNEXPECTED_CHARACTER',
      });
      expect(extractHeaderIdentity(linkerd, headers)).toMatchObject({
        ok: false,
        code: 'AUTH_HEADER_REPEATED',
      });
      await once(request, 'response');
    } finally {
      client.close();
      server.close();
    }
  });
});
