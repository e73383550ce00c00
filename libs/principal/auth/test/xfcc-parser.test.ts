import { describe, expect, it } from 'vitest';
import { parseXfcc, type XfccElement, XfccErrorCode, XfccParseError } from '../src/index.js';
import {
  HASH_A,
  HASH_B,
  INGRESS,
  ISTIO_AGENT_A,
  ISTIO_FORGED_THEN_REAL,
  ISTIO_VIA_INGRESS,
  PRINCIPAL,
  spiffe,
} from './fixtures.js';
import { int, pick, prng } from './prng.js';

function parseError(value: string, options?: Parameters<typeof parseXfcc>[1]): XfccParseError {
  try {
    parseXfcc(value, options);
  } catch (err) {
    expect(err).toBeInstanceOf(XfccParseError);
    return err as XfccParseError;
  }
  throw new Error(`expected ${JSON.stringify(value)} to be rejected`);
}

describe('parseXfcc: real headers', () => {
  it('parses an Istio sidecar element', () => {
    expect(parseXfcc(ISTIO_AGENT_A)).toEqual([
      {
        by: [PRINCIPAL],
        hash: HASH_A,
        subject: '',
        uri: [spiffe('agent-a')],
        dns: [],
        extensions: [],
        raw: ISTIO_AGENT_A,
      },
    ]);
  });

  it('keeps APPEND_FORWARD elements in order, with their raw text', () => {
    const elements = parseXfcc(ISTIO_VIA_INGRESS);
    expect(elements.map((e) => e.by)).toEqual([[INGRESS], [PRINCIPAL]]);
    expect(elements.map((e) => e.uri)).toEqual([[spiffe('agent-b')], [INGRESS]]);
    expect(elements.map((e) => e.hash)).toEqual([HASH_B, HASH_A]);
    expect(elements.map((e) => e.raw).join(',')).toBe(ISTIO_VIA_INGRESS);
    expect(parseXfcc(ISTIO_FORGED_THEN_REAL).at(-1)?.uri).toEqual([spiffe('agent-a')]);
  });

  it('parses the full Envoy field set with a URL-encoded certificate', () => {
    const cert = encodeURIComponent(
      '-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIQ==\n-----END CERTIFICATE-----\n',
    );
    const value =
      `By=${PRINCIPAL};Hash=${HASH_A};Cert="${cert}";Chain="${cert}${cert}";` +
      `Subject="CN=agent-a,OU=platform,O=Acme\\, Inc.";URI=${spiffe('agent-a')};DNS=agent-a.argocd.svc;DNS=agent-a`;
    const [element] = parseXfcc(value);
    expect(element).toMatchObject({
      cert,
      chain: cert + cert,
      subject: 'CN=agent-a,OU=platform,O=Acme\\, Inc.',
      dns: ['agent-a.argocd.svc', 'agent-a'],
      uri: [spiffe('agent-a')],
    });
  });

  it('treats keys case-insensitively and repeats By, URI and DNS', () => {
    const [element] = parseXfcc('by=a;BY=b;uri=u1;Uri=u2;dns=d1;DnS=d2;HASH=h;subject="s"');
    expect(element).toMatchObject({
      by: ['a', 'b'],
      uri: ['u1', 'u2'],
      dns: ['d1', 'd2'],
      hash: 'h',
      subject: 's',
    });
  });

  it('preserves unknown keys', () => {
    const [element] = parseXfcc('URI=u;X-Future=1;Other="a,b"');
    expect(element?.extensions).toEqual([
      { key: 'X-Future', value: '1' },
      { key: 'Other', value: 'a,b' },
    ]);
  });

  it('allows , ; = and escaped quotes inside quoted values, keeping other escapes verbatim', () => {
    const [element] = parseXfcc('Subject="CN=\\"quoted\\",O=a;b=c\\,d\\\\";URI=x');
    expect(element?.subject).toBe('CN="quoted",O=a;b=c\\,d\\\\');
    expect(element?.uri).toEqual(['x']);
  });

  it('accepts empty values', () => {
    expect(parseXfcc('Hash=;Subject=""')[0]).toMatchObject({ hash: '', subject: '' });
  });
});

describe('parseXfcc: rejections', () => {
  const cases: Array<[string, string, XfccErrorCode]> = [
    ['empty header', '', XfccErrorCode.EMPTY],
    ['unterminated quote', 'Subject="CN=a;URI=x', XfccErrorCode.UNTERMINATED_QUOTE],
    ['escaped closing quote', 'Subject="abc\\"', XfccErrorCode.UNTERMINATED_QUOTE],
    ['backslash at end', 'Subject="abc\\', XfccErrorCode.UNTERMINATED_QUOTE],
    ['empty key', '=x', XfccErrorCode.EMPTY_KEY],
    ['empty key after ;', 'URI=x;=y', XfccErrorCode.EMPTY_KEY],
    ['key without =', 'URI', XfccErrorCode.MISSING_EQUALS],
    ['key without = before ;', 'URI;Hash=x', XfccErrorCode.MISSING_EQUALS],
    ['quoted key', '"URI"=x', XfccErrorCode.INVALID_KEY],
    ['non-ASCII key', 'URÍ=x', XfccErrorCode.INVALID_KEY],
    ['leading comma', ',URI=x', XfccErrorCode.EMPTY_ELEMENT],
    ['trailing comma', 'URI=x,', XfccErrorCode.EMPTY_ELEMENT],
    ['double comma', 'URI=x,,URI=y', XfccErrorCode.EMPTY_ELEMENT],
    ['trailing semicolon', 'URI=x;', XfccErrorCode.EMPTY_PAIR],
    ['leading semicolon', ';URI=x', XfccErrorCode.EMPTY_PAIR],
    ['double semicolon', 'URI=x;;Hash=y', XfccErrorCode.EMPTY_PAIR],
    ['space after comma (folded headers)', 'URI=x, URI=y', XfccErrorCode.UNEXPECTED_CHARACTER],
    ['space before key', ' URI=x', XfccErrorCode.UNEXPECTED_CHARACTER],
    ['space after ;', 'URI=x; Hash=y', XfccErrorCode.UNEXPECTED_CHARACTER],
    ['space before =', 'URI =x', XfccErrorCode.UNEXPECTED_CHARACTER],
    ['space in unquoted value', 'URI=a b', XfccErrorCode.UNEXPECTED_CHARACTER],
    ['trailing space', 'URI=x ', XfccErrorCode.UNEXPECTED_CHARACTER],
    ['quote inside unquoted value', 'URI=a"b"', XfccErrorCode.UNEXPECTED_CHARACTER],
    ['= inside unquoted value', 'URI=a=b', XfccErrorCode.UNEXPECTED_CHARACTER],
    ['garbage after closing quote', 'Subject="x"y;URI=z', XfccErrorCode.UNEXPECTED_CHARACTER],
    ['duplicate Subject', 'Subject="a";Subject="b"', XfccErrorCode.DUPLICATE_KEY],
    ['duplicate Hash in other case', 'Hash=a;hash=b', XfccErrorCode.DUPLICATE_KEY],
    ['CR', 'URI=x\rHash=y', XfccErrorCode.CONTROL_CHARACTER],
    ['LF inside quotes', 'Subject="a\nb"', XfccErrorCode.CONTROL_CHARACTER],
    ['NUL', 'URI=x\u0000', XfccErrorCode.CONTROL_CHARACTER],
    ['tab', 'URI=x\t', XfccErrorCode.CONTROL_CHARACTER],
    ['DEL', 'URI=x\u007f', XfccErrorCode.CONTROL_CHARACTER],
  ];
  it.each(cases)('%s', (_name, value, code) => {
    const err = parseError(value);
    expect(err.code).toBe(code);
    expect(err.message.length).toBeGreaterThan(5);
  });

  it('names the offset and hints at folded headers', () => {
    const err = parseError(`${ISTIO_AGENT_A}, ${ISTIO_AGENT_A}`);
    expect(err.offset).toBe(ISTIO_AGENT_A.length + 1);
    expect(err.message).toMatch(/folded/);
  });

  it('enforces header, value and element limits', () => {
    expect(parseError(`URI=${'a'.repeat(16 * 1024)}`).code).toBe(XfccErrorCode.HEADER_TOO_LONG);
    // Multi-byte characters count as bytes, not UTF-16 units.
    expect(parseError(`Subject="${'é'.repeat(8200)}"`).code).toBe(XfccErrorCode.HEADER_TOO_LONG);
    expect(parseError(`URI=${'a'.repeat(8 * 1024 + 1)}`).code).toBe(XfccErrorCode.VALUE_TOO_LONG);
    expect(parseError(`Subject="${'a'.repeat(8 * 1024 + 1)}"`).code).toBe(XfccErrorCode.VALUE_TOO_LONG);
    expect(parseXfcc(`URI=${'a'.repeat(8 * 1024)}`)).toHaveLength(1);
    expect(parseError(Array(33).fill('URI=x').join(',')).code).toBe(XfccErrorCode.TOO_MANY_ELEMENTS);
    expect(parseXfcc(Array(32).fill('URI=x').join(','))).toHaveLength(32);
    expect(parseError('URI=abcdef', { maxValueBytes: 3 }).code).toBe(XfccErrorCode.VALUE_TOO_LONG);
    expect(parseError('URI=abcdef', { maxHeaderBytes: 5 }).code).toBe(XfccErrorCode.HEADER_TOO_LONG);
  });
});

describe('parseXfcc: properties', () => {
  const KEYS = ['By', 'URI', 'DNS', 'Hash', 'Cert', 'Chain', 'Subject', 'x-ext'];
  const VALUE_CHARS = 'abcXYZ019-._~:/?#[]@!$&\'()*+%,;="é ';

  function serialise(pairs: Array<[string, string]>): string {
    return pairs
      .map(([k, v]) => (/^[^,;="\s]+$/.test(v) ? `${k}=${v}` : `${k}="${v.replaceAll('"', '\\"')}"`))
      .join(';');
  }

  it('round-trips randomly generated headers (seeded)', () => {
    const random = prng(0xc0ffee);
    for (let n = 0; n < 500; n++) {
      const elements: Array<Array<[string, string]>> = [];
      for (let e = 0; e <= int(random, 4); e++) {
        const pairs: Array<[string, string]> = [];
        const used = new Set<string>();
        for (let p = 0; p <= int(random, 6); p++) {
          const key = pick(random, KEYS);
          if (['Hash', 'Cert', 'Chain', 'Subject'].includes(key) && used.has(key)) continue;
          used.add(key);
          let value = '';
          for (let c = 0; c < int(random, 20); c++) value += pick(random, [...VALUE_CHARS]);
          pairs.push([key, value]);
        }
        elements.push(pairs);
      }
      const header = elements.map(serialise).join(',');
      const parsed = parseXfcc(header);
      expect(parsed).toHaveLength(elements.length);
      parsed.forEach((element: XfccElement, i) => {
        const pairs = elements[i] ?? [];
        const of = (k: string) => pairs.filter(([key]) => key === k).map(([, v]) => v);
        expect(element.by).toEqual(of('By'));
        expect(element.uri).toEqual(of('URI'));
        expect(element.dns).toEqual(of('DNS'));
        expect(element.subject).toBe(of('Subject')[0]);
        expect(element.extensions).toEqual(of('x-ext').map((value) => ({ key: 'x-ext', value })));
        expect(element.raw).toBe(serialise(pairs));
      });
    }
  });

  it('never throws anything but XfccParseError on random input (seeded)', () => {
    const random = prng(1234);
    const codes = new Set<string>(Object.values(XfccErrorCode));
    const alphabet = [...'URIByHash=;,"\\ \t\r\n\u0000\u007fаé＝', 'URI=', 'spiffe://', 'Subject="'];
    let parsed = 0;
    for (let n = 0; n < 5000; n++) {
      let value = '';
      const length = int(random, 60);
      for (let i = 0; i < length; i++) {
        value += random() < 0.5 ? String.fromCharCode(int(random, 256)) : pick(random, alphabet);
      }
      try {
        const elements = parseXfcc(value);
        expect(elements.length).toBeGreaterThan(0);
        // Raw slices must reassemble the input exactly: nothing skipped, nothing invented.
        expect(elements.map((e) => e.raw).join(',')).toBe(value);
        parsed++;
      } catch (err) {
        expect(err).toBeInstanceOf(XfccParseError);
        expect(codes.has((err as XfccParseError).code)).toBe(true);
      }
    }
    expect(parsed).toBeGreaterThan(0);
  });
});
