import { describe, expect, it } from 'vitest';
import {
  CREDENTIAL_EXPIRY_WARNING_MS,
  credentialExpiryCondition,
} from '../src/cluster-agent/credential-expiry.js';

const now = Date.parse('2026-11-26T12:00:00Z');
const at = (ms: number) => new Date(now + ms);
const DAY = 24 * 3600_000;

describe('CredentialExpiresSoon', () => {
  it('is False while a token has more than two weeks left, and says when it expires', () => {
    const c = credentialExpiryCondition('token', at(15 * DAY), now);
    expect(c).toMatchObject({ status: 'False', reason: 'TokenValid' });
    expect(c.message).toContain(at(15 * DAY).toISOString());
  });

  it('turns True two weeks before a client certificate expires, and says how to renew it', () => {
    expect(credentialExpiryCondition('certificate', at(CREDENTIAL_EXPIRY_WARNING_MS), now).status).toBe(
      'False',
    );
    const c = credentialExpiryCondition('certificate', at(CREDENTIAL_EXPIRY_WARNING_MS - 1), now);
    expect(c).toMatchObject({ status: 'True', reason: 'CertificateExpiresSoon' });
    expect(c.message).toContain('pullplane cert create --kind agent');
  });

  it('says Expired once the moment has passed', () => {
    expect(credentialExpiryCondition('token', at(0), now)).toMatchObject({
      status: 'True',
      reason: 'TokenExpired',
    });
    expect(credentialExpiryCondition('certificate', at(-DAY), now)).toMatchObject({
      status: 'True',
      reason: 'CertificateExpired',
    });
  });

  it('is False with NoExpiry for a credential without one', () => {
    expect(credentialExpiryCondition('token', undefined, now)).toMatchObject({
      status: 'False',
      reason: 'NoExpiry',
    });
  });
});
