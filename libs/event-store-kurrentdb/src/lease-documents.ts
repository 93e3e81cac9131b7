import type { Claim, Lease } from '@oncegate/event-store';

/**
 * Leases and claims are not events, and KurrentDB has no table: each kind is one document, the last event of its own
 * stream, rewritten whole by every change. A change reads the document with its revision and appends the next one
 * expecting that revision, so two writers cannot both change the same version: the loser is refused and decides again
 * on the newer document (compare-and-set). That is what makes a claim exclusive, and a lease renewal last-write-wins.
 * The functions here decide a change on a document; `undefined` means nothing to write.
 */

export interface LeaseEntry {
  readonly holder: string;
  readonly expiresAt: string;
  /** From the renewing process's clock, for the operator. */
  readonly renewedAt: string;
}

export interface LeasesDocument {
  readonly leases: readonly LeaseEntry[];
}

export interface ClaimsDocument {
  readonly claims: readonly Claim[];
}

export const EMPTY_LEASES: LeasesDocument = { leases: [] };
export const EMPTY_CLAIMS: ClaimsDocument = { claims: [] };

/** Code-unit order, the same in every process (no locale). */
function byKey<T>(key: (item: T) => string): (a: T, b: T) => number {
  return (a, b) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0);
}

export function renewLease(document: LeasesDocument, holder: string, expiresAt: string, renewedAt: string): LeasesDocument {
  const leases = document.leases.filter((lease) => lease.holder !== holder);
  leases.push({ holder, expiresAt, renewedAt });
  return { leases: leases.sort(byKey((lease) => lease.holder)) };
}

export function releaseLease(document: LeasesDocument, holder: string): LeasesDocument | undefined {
  if (!document.leases.some((lease) => lease.holder === holder)) return undefined;
  return { leases: document.leases.filter((lease) => lease.holder !== holder) };
}

export function leaseOf(document: LeasesDocument, holder: string): Lease | undefined {
  const entry = document.leases.find((lease) => lease.holder === holder);
  return entry === undefined ? undefined : { holder: entry.holder, expiresAt: entry.expiresAt };
}

/** The leases whose holder starts with `prefix`, by holder. */
export function leasesWithPrefix(document: LeasesDocument, prefix: string): Lease[] {
  return document.leases
    .filter((lease) => lease.holder.startsWith(prefix))
    .sort(byKey((lease) => lease.holder))
    .map(({ holder, expiresAt }) => ({ holder, expiresAt }));
}

/**
 * The claim `name` for `owner` until `expiresAt` when nobody holds it, when its holder's claim expired at or before
 * `now`, or when `owner` holds it: the new document and the claim as it then stands. Another owner's live claim is
 * left alone (no document) and returned as it is.
 */
export function takeClaim(
  document: ClaimsDocument,
  name: string,
  owner: string,
  expiresAt: string,
  now: string,
): { readonly document: ClaimsDocument | undefined; readonly claim: Claim } {
  const held = document.claims.find((claim) => claim.name === name);
  // ISO-8601 instants of `toISOString` (validated by the store) compare as text in time order.
  if (held !== undefined && held.owner !== owner && held.expiresAt > now) return { document: undefined, claim: held };
  const claim: Claim = { name, owner, expiresAt };
  const claims = document.claims.filter((other) => other.name !== name);
  claims.push(claim);
  return { document: { claims: claims.sort(byKey((other) => other.name)) }, claim };
}

/** Drops the claim when `owner` holds it; `undefined` otherwise. */
export function releaseClaim(document: ClaimsDocument, name: string, owner: string): ClaimsDocument | undefined {
  if (!document.claims.some((claim) => claim.name === name && claim.owner === owner)) return undefined;
  return { claims: document.claims.filter((claim) => claim.name !== name) };
}

/** The claims whose name starts with `prefix`, by name. */
export function claimsWithPrefix(document: ClaimsDocument, prefix: string): Claim[] {
  return document.claims.filter((claim) => claim.name.startsWith(prefix)).sort(byKey((claim) => claim.name));
}

/** A document read back: checks its shape so a foreign event in the stream is an error, not a wrong answer. */
export function leasesDocumentOf(data: unknown): LeasesDocument {
  const leases = (data as { leases?: unknown })?.leases;
  if (!Array.isArray(leases) || !leases.every((lease) => isStrings(lease, ['holder', 'expiresAt', 'renewedAt']))) {
    throw new TypeError('the leases document is not one this store wrote');
  }
  return { leases: leases as LeaseEntry[] };
}

export function claimsDocumentOf(data: unknown): ClaimsDocument {
  const claims = (data as { claims?: unknown })?.claims;
  if (!Array.isArray(claims) || !claims.every((claim) => isStrings(claim, ['name', 'owner', 'expiresAt']))) {
    throw new TypeError('the claims document is not one this store wrote');
  }
  return { claims: (claims as Claim[]).map(({ name, owner, expiresAt }) => ({ name, owner, expiresAt })) };
}

function isStrings(value: unknown, keys: readonly string[]): boolean {
  return typeof value === 'object' && value !== null && keys.every((key) => typeof (value as Record<string, unknown>)[key] === 'string');
}
