import { describe, expect, it } from 'vitest';
import { isJsonContentType, negotiateAccept } from '../src/index.js';

describe('negotiateAccept', () => {
  it("rewrites kubectl's Table accept header to JSON only, keeping the Table parameters and order", () => {
    expect(
      negotiateAccept(
        'application/vnd.kubernetes.protobuf;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1;g=meta.k8s.io,application/json',
      ),
    ).toBe('application/json;as=Table;v=v1;g=meta.k8s.io,application/json');
    expect(negotiateAccept('application/json;as=Table;v=v1beta1;g=meta.k8s.io, application/json')).toBe(
      'application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json',
    );
  });

  it('turns protobuf, CBOR, YAML and wildcards into JSON', () => {
    expect(negotiateAccept('application/vnd.kubernetes.protobuf, */*')).toBe('application/json');
    expect(negotiateAccept('application/vnd.kubernetes.protobuf;stream=watch')).toBe(
      'application/json;stream=watch',
    );
    expect(negotiateAccept('application/cbor')).toBe('application/json');
    expect(negotiateAccept('application/yaml')).toBe('application/json');
    expect(negotiateAccept('application/*;q=0.8')).toBe('application/json');
  });

  it('drops q-values and defaults to JSON', () => {
    expect(
      negotiateAccept('application/json;q=0.9;as=Table;g=meta.k8s.io;v=v1, application/json;q=0.5'),
    ).toBe('application/json;as=Table;g=meta.k8s.io;v=v1,application/json');
    expect(negotiateAccept(undefined)).toBe('application/json');
    expect(negotiateAccept('')).toBe('application/json');
    expect(negotiateAccept(' , ')).toBe('application/json');
  });

  it('does not split on commas inside quoted parameters', () => {
    expect(negotiateAccept('application/json;x="a,b"')).toBe('application/json;x="a,b"');
  });
});

describe('isJsonContentType', () => {
  it('accepts JSON and JSON watch streams only', () => {
    expect(isJsonContentType('application/json')).toBe(true);
    expect(isJsonContentType('application/json;stream=watch')).toBe(true);
    expect(isJsonContentType('Application/JSON; charset=utf-8')).toBe(true);
    expect(isJsonContentType('application/vnd.kubernetes.protobuf')).toBe(false);
    expect(isJsonContentType('application/json-patch+json')).toBe(false);
    expect(isJsonContentType('text/plain')).toBe(false);
    expect(isJsonContentType(undefined)).toBe(false);
  });
});
