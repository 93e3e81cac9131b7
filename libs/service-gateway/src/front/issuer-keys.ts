import { Logger } from '@nestjs/common';
import { createLocalJWKSet, createRemoteJWKSet, errors, type CryptoKey, type FlattenedJWSInput, type JSONWebKeySet, type JWSHeaderParameters } from 'jose';
import type { Clock } from '@oncegate/execution-journal';
import type { OAuthConfig } from '@oncegate/host-config';
import type { ProcessMetrics } from '@oncegate/host-operations';

/**
 * The least time between two reads of the key set. A token naming a key the set does not hold makes the gateway
 * read it again, and anyone can make such a token: this bounds what they cost the provider to one read a second.
 */
export const REREAD_INTERVAL_MS = 1_000;
/** How often, at most, a line says how many tokens named a key the issuer does not publish (the metric counts each). */
const REFUSALS_LOGGED_EVERY_MS = 10_000;
/** How often, at most, a line says the key set still cannot be read, through an outage of hours (the metric counts each read). */
const FAILURES_LOGGED_EVERY_MS = 60_000;

/** The issuer's key set could not be read and no keys read earlier may serve; `message` is for the log, never for the client. */
export class IssuerKeysUnavailable extends Error {
  readonly kind = 'issuer_keys_unavailable';
}

/** Why the key set was read; the label of `oncegate_oauth_key_set_reads_total`. */
type ReadReason = 'first' | 'expired' | 'unknown_key';

/** One successful read of the key set. */
interface KeySet {
  readonly keyOf: (header: JWSHeaderParameters, token: FlattenedJWSInput) => Promise<CryptoKey>;
  readonly kids: readonly string[];
  /** When it was read, on the gateway's clock: its age decides when it is read again and how long it may serve. */
  readonly readAt: number;
  /** Its place among the successful reads (1 for the first): a token is judged on a set read after it came. */
  readonly seq: number;
}

export interface IssuerKeysOptions {
  readonly clock: Clock;
  /** Reads a metadata document (OpenID discovery, RFC 8414) to find `jwks_uri`. */
  readonly fetchJson: (url: string) => Promise<unknown>;
  readonly metrics?: Pick<ProcessMetrics, 'oauthKeySetReads' | 'oauthUnknownKeyTokens' | 'gauge'>;
  /** The least time between two reads; `REREAD_INTERVAL_MS` unless a test says otherwise. */
  readonly rereadIntervalMs?: number;
}

/**
 * The issuer's signing keys, as `jwtVerify`'s key function (`keyOf`). jose reads the set and picks a token's key in
 * it; when to read it is decided here:
 *
 * - A set serves for `keys_max_age`; the first token after that waits for the next read, so a key the provider
 *   dropped is refused within that age.
 * - A token naming a key the set does not hold (a rotation, or a forged token) is judged on a set read after it came:
 *   it shares a read in flight, or starts one, or — when the last read is less than the re-read interval old — waits
 *   for the one read scheduled at the end of that interval, shared by all such tokens. It is refused only when that
 *   set does not hold its key either; never because a read was not allowed yet.
 * - When the set cannot be read (the provider stopped, its key-set URL failing), the keys read last serve for
 *   `keys_stale_if_error` past their age, and a token they do not cover gets `IssuerKeysUnavailable` (503), never a
 *   refusal. Failed reads are paced like the others, and logged (at most once a minute), not once per token.
 */
export class IssuerKeys {
  private readonly log = new Logger('oauth');
  private readonly intervalMs: number;
  private current: KeySet | undefined;
  private reads = 0;
  private reading: Promise<KeySet> | undefined;
  private scheduled: Promise<KeySet> | undefined;
  private lastAttempt: { readonly at: number; readonly failure?: string } | undefined;
  /** jose's reader of the set's URL, once the URL is known (`oauth.jwks_uri`, else the issuer's metadata). */
  private source: Promise<{ readonly url: string; readonly remote: ReturnType<typeof createRemoteJWKSet> }> | undefined;
  private refusals = { unlogged: 0, loggedAt: Number.NEGATIVE_INFINITY };
  /** The failed reads since the last that succeeded. */
  private failures: { readonly since: number; count: number; loggedAt: number } | undefined;

  constructor(
    private readonly config: OAuthConfig,
    private readonly options: IssuerKeysOptions,
  ) {
    this.intervalMs = options.rereadIntervalMs ?? REREAD_INTERVAL_MS;
    options.metrics?.gauge('oncegate_oauth_key_set_age_seconds', "Age of the OAuth issuer's key set serving now (absent before it was first read).", async () =>
      this.current === undefined ? undefined : this.ageOf(this.current) / 1000,
    );
  }

  /** jwtVerify's key function: the token's key, `JWKSNoMatchingKey` when the issuer does not publish it, or `IssuerKeysUnavailable`. */
  readonly keyOf = async (header: JWSHeaderParameters, token: FlattenedJWSInput): Promise<CryptoKey> => {
    const readsBefore = this.reads;
    let set = await this.usable();
    const key = await lookUp(set, header, token);
    if (key !== undefined) return key;
    if (set.seq <= readsBefore) {
      // Read before the token came: the provider may have published its key since.
      try {
        set = await this.newerThan(set);
      } catch (error) {
        this.options.metrics?.oauthUnknownKeyTokens.inc({ result: 'unavailable' });
        throw error;
      }
      const found = await lookUp(set, header, token);
      if (found !== undefined) {
        this.options.metrics?.oauthUnknownKeyTokens.inc({ result: 'found' });
        return found;
      }
    }
    this.options.metrics?.oauthUnknownKeyTokens.inc({ result: 'refused' });
    this.noteRefusal();
    throw new errors.JWKSNoMatchingKey();
  };

  /** The set to check a token with: the one held while it is younger than `keys_max_age`, else the next read. */
  private async usable(): Promise<KeySet> {
    const held = this.current;
    if (held === undefined) return this.read('first');
    if (this.ageOf(held) < this.config.keysMaxAgeMs) return held;
    const away = this.lastAttempt?.failure !== undefined;
    const next = this.read('expired');
    // While the provider is away, tokens are not held up by each attempt to reach it: the keys read last serve.
    if (away && this.servesStale(held)) {
      next.catch(() => undefined);
      return held;
    }
    try {
      return await next;
    } catch (error) {
      if (this.servesStale(held)) return held;
      throw error;
    }
  }

  /** A set read after `set`: the current one if another token already had it read, else a read (shared, paced). */
  private newerThan(set: KeySet): Promise<KeySet> {
    if (this.current !== undefined && this.current.seq > set.seq) return Promise.resolve(this.current);
    return this.read('unknown_key');
  }

  private read(reason: ReadReason): Promise<KeySet> {
    if (this.reading !== undefined) return this.reading;
    const last = this.lastAttempt;
    // Capped at the interval, so a clock set back does not hold reads off for longer.
    const wait = last === undefined ? 0 : Math.min(this.intervalMs, last.at + this.intervalMs - this.now());
    if (wait <= 0) return this.start(reason);
    if (last!.failure !== undefined) return Promise.reject(new IssuerKeysUnavailable(`the issuer's key set could not be read: ${last!.failure}`));
    // Read less than the interval ago, and it succeeded: only a token naming an unknown key asks again that soon.
    if (reason !== 'unknown_key' && this.current !== undefined) return Promise.resolve(this.current);
    this.scheduled ??= new Promise<void>((resolve) => setTimeout(resolve, wait).unref()).then(() => {
      this.scheduled = undefined;
      return this.reading ?? this.start(reason);
    });
    return this.scheduled;
  }

  private start(reason: ReadReason): Promise<KeySet> {
    const at = this.now();
    this.lastAttempt = { at };
    const reading = this.fetchKeySet().then(
      ({ url, jwks }) => {
        const set: KeySet = { keyOf: createLocalJWKSet(jwks), kids: jwks.keys.map((key) => key.kid ?? '(no kid)'), readAt: at, seq: ++this.reads };
        this.options.metrics?.oauthKeySetReads.inc({ reason, result: 'read' });
        if (this.failures !== undefined) this.log.log(`the issuer's key set was read again, after ${this.failures.count} failed read(s) since ${new Date(this.failures.since).toISOString()}`);
        this.failures = undefined;
        this.logChanges(this.current, set, url, reason);
        this.current = set;
        return set;
      },
      (error: unknown) => {
        const failure = (error as Error).message;
        this.lastAttempt = { at, failure };
        this.options.metrics?.oauthKeySetReads.inc({ reason, result: 'failed' });
        // A discovered key-set URL is looked for again next time: the provider may have moved it.
        if (this.config.jwksUri === null) this.source = undefined;
        const failures = (this.failures ??= { since: at, count: 0, loggedAt: Number.NEGATIVE_INFINITY });
        failures.count += 1;
        if (at - failures.loggedAt >= FAILURES_LOGGED_EVERY_MS) {
          const streak = failures.count > 1 ? ` (${failures.count} failed reads since ${new Date(failures.since).toISOString()})` : '';
          this.log.warn(`the issuer's key set could not be read (${reason}): ${failure}${streak}; ${this.whileAway()}`);
          failures.loggedAt = at;
        }
        throw new IssuerKeysUnavailable(`the issuer's key set could not be read: ${failure}`);
      },
    );
    this.reading = reading.finally(() => (this.reading = undefined));
    return this.reading;
  }

  /** jose reads the set (200 only, no redirects, a 5 s timeout, a valid JWKS); `reload` reads it whenever asked. */
  private async fetchKeySet(): Promise<{ url: string; jwks: JSONWebKeySet }> {
    this.source ??= this.locate().then(
      (url) => ({ url, remote: createRemoteJWKSet(new URL(url)) }),
      (error: unknown) => {
        this.source = undefined;
        throw error;
      },
    );
    const { url, remote } = await this.source;
    try {
      await remote.reload();
    } catch (error) {
      throw new Error(`${url}: ${(error as Error).message}`, { cause: error });
    }
    return { url, jwks: remote.jwks()! };
  }

  /** The key set's URL: `oauth.jwks_uri`, else its issuer's metadata's `jwks_uri` (OpenID discovery, then RFC 8414). */
  private async locate(): Promise<string> {
    if (this.config.jwksUri !== null) return this.config.jwksUri;
    const issuer = this.config.issuer.replace(/\/$/, '');
    const url = new URL(this.config.issuer);
    const candidates = [`${issuer}/.well-known/openid-configuration`, `${url.origin}/.well-known/oauth-authorization-server${url.pathname === '/' ? '' : url.pathname}`];
    const failures: string[] = [];
    for (const candidate of candidates) {
      try {
        const metadata = (await this.options.fetchJson(candidate)) as { issuer?: unknown; jwks_uri?: unknown };
        if (metadata.issuer !== this.config.issuer) throw new Error(`${candidate} names the issuer ${String(metadata.issuer)}, not ${this.config.issuer}`);
        if (typeof metadata.jwks_uri !== 'string') throw new Error(`${candidate} has no jwks_uri`);
        return metadata.jwks_uri;
      } catch (error) {
        failures.push(`${candidate}: ${(error as Error).message}`);
      }
    }
    throw new Error(`the issuer's metadata could not be read: ${failures.join('; ')}`);
  }

  private servesStale(set: KeySet): boolean {
    return this.ageOf(set) < this.config.keysMaxAgeMs + this.config.keysStaleIfErrorMs;
  }

  /** What tokens get while the set cannot be read, for the log line of a failed read. */
  private whileAway(): string {
    const held = this.current;
    if (held === undefined || !this.servesStale(held)) return 'access tokens are answered 503 until it can be read';
    const until = new Date(held.readAt + this.config.keysMaxAgeMs + this.config.keysStaleIfErrorMs).toISOString();
    return `the keys read at ${new Date(held.readAt).toISOString()} (${held.kids.join(', ')}) serve until ${until} (oauth.keys_stale_if_error); tokens signed with another key are answered 503`;
  }

  private logChanges(before: KeySet | undefined, after: KeySet, url: string, reason: ReadReason): void {
    if (before === undefined) {
      this.log.log(`read the issuer's key set at ${url}: keys ${after.kids.join(', ')}`);
      return;
    }
    const added = after.kids.filter((kid) => !before.kids.includes(kid));
    const dropped = before.kids.filter((kid) => !after.kids.includes(kid));
    if (added.length === 0 && dropped.length === 0) return;
    this.log.log(
      `the issuer's key set changed (read as ${reason}): keys ${after.kids.join(', ')}` +
        `${added.length > 0 ? `; new: ${added.join(', ')}` : ''}${dropped.length > 0 ? `; dropped: ${dropped.join(', ')}` : ''}`,
    );
  }

  /** Tokens naming a key the issuer does not publish are counted, and told in one line every few seconds (never their key id, which is anyone's text). */
  private noteRefusal(): void {
    this.refusals.unlogged += 1;
    const now = this.now();
    if (now - this.refusals.loggedAt < REFUSALS_LOGGED_EVERY_MS) return;
    this.log.warn(
      `${this.refusals.unlogged} access token(s) signed with a key the issuer does not publish were refused ` +
        `(oncegate_oauth_unknown_key_tokens_total{result="refused"}); keys held: ${this.current?.kids.join(', ') ?? 'none'}`,
    );
    this.refusals = { unlogged: 0, loggedAt: now };
  }

  private ageOf(set: KeySet): number {
    return this.now() - set.readAt;
  }

  private now(): number {
    return this.options.clock.now().getTime();
  }
}

/** The token's key in `set`, or `undefined` when the set holds none for it. */
async function lookUp(set: KeySet, header: JWSHeaderParameters, token: FlattenedJWSInput): Promise<CryptoKey | undefined> {
  try {
    return await set.keyOf(header, token);
  } catch (error) {
    if (error instanceof errors.JWKSNoMatchingKey) return undefined;
    throw error;
  }
}
