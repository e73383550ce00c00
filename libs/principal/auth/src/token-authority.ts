import {
  createPrivateKey,
  createPublicKey,
  generateKeyPairSync,
  type KeyObject,
  randomUUID,
} from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { isDnsLabel } from '@pullplane/names';
import { calculateJwkThumbprint, type JWTPayload, errors as joseErrors, jwtVerify, SignJWT } from 'jose';
import type { DenyList } from './deny-list.js';
import { TokenError, TokenErrorCode } from './errors.js';

export const TOKEN_ISSUER = 'pullplane';

/** JWS algorithms by key type: ECDSA P-256 signs ES256; RSA signs RS512 (argocd-agent's) and verifies RS256 too. */
export type TokenAlgorithm = 'ES256' | 'RS256' | 'RS512';
const MIN_RSA_BITS = 2048;
const MAX_TOKEN_LENGTH = 8 * 1024;
const MAX_JTI_LENGTH = 128;
const COMPACT_JWS = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/;

export interface TokenAuthorityOptions {
  /** Default `pullplane`. */
  issuer?: string;
  /** RSA keys only: the algorithm `issue` signs with; default RS512. */
  rsaAlgorithm?: 'RS256' | 'RS512';
  /** Put into issued tokens and required on verify; without it, tokens carrying `aud` are refused. */
  audience?: string;
  denyList?: DenyList;
  /** Default 30 s. */
  clockToleranceSeconds?: number;
  /** Injectable clock for tests. */
  now?: () => Date;
}

export interface IssueTokenOptions {
  /** Omit for a token that never expires (argocd-agent's self-registration model). */
  ttlSeconds?: number;
  /** Overrides the authority's audience. */
  audience?: string;
  /**
   * Agents a caller token grants access to (resource proxy callers such as the Argo CD
   * server). Agent tokens leave it unset: their subject is the agent itself.
   */
  agents?: readonly string[];
}

export interface VerifiedToken {
  agent: string;
  jti: string;
  issuedAt: Date;
  expiresAt?: Date;
  /** The `agents` claim of a caller token. */
  agents?: string[];
}

/**
 * Issues and verifies agent tokens: compact JWTs with `sub` = agent name and a unique `jti` so
 * a single token can be revoked through the DenyList. The key decides the algorithm: ECDSA
 * P-256 signs ES256; RSA (argocd-agent's `argocd-agent-jwt`) signs RS512 and verifies RS256
 * and RS512. A public key makes a verifier that cannot issue.
 */
export class TokenAuthority {
  readonly issuer: string;
  /** RFC 7638 thumbprint of the public key, sent as `kid` to make key rotation traceable. */
  readonly keyId: string;
  /** What `issue` signs with. */
  readonly algorithm: TokenAlgorithm;
  private readonly verifyAlgorithms: TokenAlgorithm[];
  private readonly privateKey: KeyObject | undefined;
  private readonly publicKey: KeyObject;
  private readonly audience: string | undefined;
  private readonly denyList: DenyList | undefined;
  private readonly toleranceSeconds: number;
  private readonly now: () => Date;

  private constructor(key: KeyObject, keyId: string, options: TokenAuthorityOptions) {
    this.privateKey = key.type === 'private' ? key : undefined;
    this.publicKey = key.type === 'private' ? createPublicKey(key) : key;
    this.keyId = keyId;
    if (key.asymmetricKeyType === 'rsa') {
      this.algorithm = options.rsaAlgorithm ?? 'RS512';
      this.verifyAlgorithms = ['RS256', 'RS512'];
    } else {
      this.algorithm = 'ES256';
      this.verifyAlgorithms = ['ES256'];
    }
    this.issuer = options.issuer ?? TOKEN_ISSUER;
    this.audience = options.audience;
    this.denyList = options.denyList;
    this.toleranceSeconds = options.clockToleranceSeconds ?? 30;
    this.now = options.now ?? (() => new Date());
  }

  /** A fresh P-256 key; export it with `exportPrivateKeyPem()` to share it between replicas. */
  static generate(options: TokenAuthorityOptions = {}): Promise<TokenAuthority> {
    const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    return TokenAuthority.create(privateKey, options);
  }

  /** A fresh RSA key (tests, development): what argocd-agent's `argocd-agent-jwt` holds. */
  static generateRsa(options: TokenAuthorityOptions = {}, modulusLength = 3072): Promise<TokenAuthority> {
    const { privateKey } = generateKeyPairSync('rsa', { modulusLength });
    return TokenAuthority.create(privateKey, options);
  }

  /**
   * From a private key in PEM (P-256 in PKCS#8 or SEC1; RSA in PKCS#8 or PKCS#1), or a public
   * key (SPKI or PKCS#1) for a verifier that cannot issue.
   */
  static fromPem(pem: string, options: TokenAuthorityOptions = {}): Promise<TokenAuthority> {
    let key: KeyObject;
    try {
      key = createPrivateKey(pem);
    } catch (cause) {
      try {
        key = createPublicKey(pem);
      } catch {
        throw new TokenError(
          TokenErrorCode.INVALID_KEY,
          'signing key is not a readable unencrypted PEM private (or public) key',
          { cause },
        );
      }
    }
    return TokenAuthority.create(key, options);
  }

  static async fromFile(path: string, options: TokenAuthorityOptions = {}): Promise<TokenAuthority> {
    let pem: string;
    try {
      pem = await readFile(path, 'utf8');
    } catch (cause) {
      throw new TokenError(TokenErrorCode.INVALID_KEY, `cannot read signing key file ${path}`, { cause });
    }
    return TokenAuthority.fromPem(pem, options);
  }

  /** A PEM string when it contains a PEM header, otherwise a file path. */
  static load(source: string, options: TokenAuthorityOptions = {}): Promise<TokenAuthority> {
    return source.includes('-----BEGIN ')
      ? TokenAuthority.fromPem(source, options)
      : TokenAuthority.fromFile(source, options);
  }

  private static async create(key: KeyObject, options: TokenAuthorityOptions): Promise<TokenAuthority> {
    const type = key.asymmetricKeyType;
    const ecP256 = type === 'ec' && key.asymmetricKeyDetails?.namedCurve === 'prime256v1';
    if (type === 'rsa') {
      const bits = key.asymmetricKeyDetails?.modulusLength ?? 0;
      if (bits < MIN_RSA_BITS) {
        throw new TokenError(
          TokenErrorCode.INVALID_KEY,
          `RSA signing key has ${bits} bits; at least ${MIN_RSA_BITS} are required`,
        );
      }
    } else if (!ecP256) {
      const kind = key.asymmetricKeyDetails?.namedCurve ?? type ?? 'unknown';
      throw new TokenError(
        TokenErrorCode.INVALID_KEY,
        `signing key must be ECDSA P-256 (ES256) or RSA (RS256/RS512), got ${kind}`,
      );
    }
    const publicKey = key.type === 'private' ? createPublicKey(key) : key;
    const keyId = await calculateJwkThumbprint(publicKey.export({ format: 'jwk' }) as Record<string, string>);
    return new TokenAuthority(key, keyId, options);
  }

  /** Whether this authority holds a private key (can issue), not only a public one. */
  get canIssue(): boolean {
    return this.privateKey !== undefined;
  }

  exportPrivateKeyPem(): string {
    return this.signingKey().export({ type: 'pkcs8', format: 'pem' }).toString();
  }

  private signingKey(): KeyObject {
    if (!this.privateKey) {
      throw new TokenError(
        TokenErrorCode.INVALID_KEY,
        'this key is a public key: it verifies tokens but cannot issue them',
      );
    }
    return this.privateKey;
  }

  exportPublicKeyPem(): string {
    return this.publicKey.export({ type: 'spki', format: 'pem' }).toString();
  }

  async issue(agentName: string, options: IssueTokenOptions = {}): Promise<string> {
    if (!isDnsLabel(agentName)) {
      throw new TokenError(
        TokenErrorCode.INVALID_REQUEST,
        `agent name ${JSON.stringify(agentName)} is not a DNS-1123 label`,
      );
    }
    const { ttlSeconds } = options;
    if (ttlSeconds !== undefined && !(Number.isSafeInteger(ttlSeconds) && ttlSeconds > 0)) {
      throw new TokenError(
        TokenErrorCode.INVALID_REQUEST,
        `ttlSeconds must be a positive integer, got ${ttlSeconds}`,
      );
    }
    const issuedAt = Math.floor(this.now().getTime() / 1000);
    for (const a of options.agents ?? []) {
      if (!isDnsLabel(a)) {
        throw new TokenError(
          TokenErrorCode.INVALID_REQUEST,
          `agent name ${JSON.stringify(a)} is not a DNS-1123 label`,
        );
      }
    }
    const jwt = new SignJWT(options.agents ? { agents: [...options.agents] } : {})
      .setProtectedHeader({ alg: this.algorithm, typ: 'JWT', kid: this.keyId })
      .setIssuer(this.issuer)
      .setSubject(agentName)
      .setJti(randomUUID())
      .setIssuedAt(issuedAt);
    if (ttlSeconds !== undefined) jwt.setExpirationTime(issuedAt + ttlSeconds);
    const audience = options.audience ?? this.audience;
    if (audience !== undefined) jwt.setAudience(audience);
    return jwt.sign(this.signingKey());
  }

  /** @throws TokenError with the specific reason; never any other error for bad input. */
  async verify(token: string, options: { audience?: string } = {}): Promise<VerifiedToken> {
    if (typeof token !== 'string' || token.length > MAX_TOKEN_LENGTH || !COMPACT_JWS.test(token)) {
      throw new TokenError(TokenErrorCode.MALFORMED, 'token is not a compact JWS');
    }
    const now = this.now();
    const audience = options.audience ?? this.audience;
    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(token, this.publicKey, {
        algorithms: this.verifyAlgorithms,
        issuer: this.issuer,
        typ: 'JWT',
        clockTolerance: this.toleranceSeconds,
        currentDate: now,
        ...(audience === undefined ? {} : { audience }),
      }));
    } catch (err) {
      throw translate(err);
    }
    if (audience === undefined && payload.aud !== undefined) {
      throw new TokenError(
        TokenErrorCode.WRONG_AUDIENCE,
        'token is scoped to an audience this verifier does not accept',
      );
    }
    const { sub: agent, jti, iat, exp } = payload;
    if (typeof jti !== 'string' || jti === '' || jti.length > MAX_JTI_LENGTH) {
      throw new TokenError(TokenErrorCode.MALFORMED, 'token has no usable jti claim');
    }
    if (typeof iat !== 'number') throw new TokenError(TokenErrorCode.MALFORMED, 'token has no iat claim');
    if (iat > now.getTime() / 1000 + this.toleranceSeconds) {
      throw new TokenError(TokenErrorCode.NOT_YET_VALID, 'token was issued in the future');
    }
    if (typeof agent !== 'string' || !isDnsLabel(agent)) {
      throw new TokenError(TokenErrorCode.INVALID_SUBJECT, 'token subject is not a DNS-1123 agent name');
    }
    if (this.denyList && (await this.denyList.isDenied(jti, agent))) {
      throw new TokenError(TokenErrorCode.REVOKED, `token ${jti} of agent ${agent} has been revoked`);
    }
    const scope = payload.agents;
    if (
      scope !== undefined &&
      !(Array.isArray(scope) && scope.every((a) => typeof a === 'string' && isDnsLabel(a)))
    ) {
      throw new TokenError(TokenErrorCode.MALFORMED, 'token agents claim is not a list of agent names');
    }
    return {
      agent,
      jti,
      ...(scope === undefined ? {} : { agents: scope as string[] }),
      issuedAt: new Date(iat * 1000),
      ...(exp === undefined ? {} : { expiresAt: new Date(exp * 1000) }),
    };
  }
}

function translate(err: unknown): TokenError {
  if (err instanceof joseErrors.JWTExpired) {
    return new TokenError(TokenErrorCode.EXPIRED, 'token has expired', { cause: err });
  }
  if (err instanceof joseErrors.JWTClaimValidationFailed) {
    const byClaim: Record<string, TokenErrorCode> = {
      iss: TokenErrorCode.WRONG_ISSUER,
      aud: TokenErrorCode.WRONG_AUDIENCE,
      nbf: TokenErrorCode.NOT_YET_VALID,
    };
    const code = byClaim[err.claim] ?? TokenErrorCode.MALFORMED;
    return new TokenError(code, `token claim check failed: ${err.message}`, { cause: err });
  }
  if (err instanceof joseErrors.JWSSignatureVerificationFailed) {
    return new TokenError(TokenErrorCode.BAD_SIGNATURE, 'token signature is invalid', { cause: err });
  }
  if (err instanceof joseErrors.JOSEError) {
    return new TokenError(TokenErrorCode.MALFORMED, `token is malformed: ${err.message}`, { cause: err });
  }
  return new TokenError(TokenErrorCode.MALFORMED, 'token is malformed', { cause: err });
}
