import { describe, expect, it } from 'vitest';
import {
  claimsDocumentOf,
  claimsWithPrefix,
  EMPTY_CLAIMS,
  EMPTY_LEASES,
  leaseOf,
  leasesDocumentOf,
  leasesWithPrefix,
  releaseClaim,
  releaseLease,
  renewLease,
  takeClaim,
} from './lease-documents';

const at = (seconds: number) => `2026-11-30T06:00:${String(seconds).padStart(2, '0')}.000Z`;

describe('kurrentdb lease and claim documents', () => {
  it('given renewals, then the last one of a holder wins and holders are kept apart, in holder order', () => {
    let leases = renewLease(EMPTY_LEASES, 'dispatcher-http@b', at(20), at(0));
    leases = renewLease(leases, 'dispatcher-http@a', at(10), at(0));
    leases = renewLease(leases, 'dispatcher-http@a', at(15), at(5));
    expect(leaseOf(leases, 'dispatcher-http@a')).toEqual({ holder: 'dispatcher-http@a', expiresAt: at(15) });
    expect(leases.leases.map((lease) => lease.holder)).toEqual(['dispatcher-http@a', 'dispatcher-http@b']);
    expect(leases.leases[0]!.renewedAt).toBe(at(5));
  });

  it('given a release, then the lease is gone, and releasing what nobody holds writes nothing', () => {
    const leases = renewLease(EMPTY_LEASES, 'a', at(10), at(0));
    expect(leaseOf(releaseLease(leases, 'a')!, 'a')).toBeUndefined();
    expect(releaseLease(leases, 'never-held')).toBeUndefined();
  });

  it('given leases, then they are listed by a plain prefix, in holder order, expired or not', () => {
    let leases = EMPTY_LEASES;
    for (const holder of ['group:authorization:member:b', 'group:authorization:member:a', 'group:dispatcher-http:member:c', 'group:authorization:memberx']) {
      leases = renewLease(leases, holder, at(10), at(0));
    }
    expect(leasesWithPrefix(leases, 'group:authorization:member:').map((lease) => lease.holder)).toEqual(['group:authorization:member:a', 'group:authorization:member:b']);
    expect(leasesWithPrefix(leases, 'group:%')).toEqual([]);
  });

  it('given a claim, then it is taken when free, kept by its owner, refused to another until it expires at or before now', () => {
    const first = takeClaim(EMPTY_CLAIMS, 'p/1', 'a', at(10), at(0));
    expect(first.claim).toEqual({ name: 'p/1', owner: 'a', expiresAt: at(10) });
    const refused = takeClaim(first.document!, 'p/1', 'b', at(12), at(5));
    expect(refused).toEqual({ document: undefined, claim: { name: 'p/1', owner: 'a', expiresAt: at(10) } });
    const renewed = takeClaim(first.document!, 'p/1', 'a', at(20), at(5));
    expect(renewed.claim.expiresAt).toBe(at(20));
    expect(takeClaim(renewed.document!, 'p/1', 'b', at(30), at(20)).claim).toEqual({ name: 'p/1', owner: 'b', expiresAt: at(30) });
    expect(takeClaim(renewed.document!, 'p/1', 'b', at(30), at(19)).document).toBeUndefined();
  });

  it('given a release by a former owner, then nothing changes; by the owner, the claim is free', () => {
    const held = takeClaim(EMPTY_CLAIMS, 'p/1', 'b', at(30), at(0)).document!;
    expect(releaseClaim(held, 'p/1', 'a')).toBeUndefined();
    expect(claimsWithPrefix(releaseClaim(held, 'p/1', 'b')!, 'p/')).toEqual([]);
  });

  it('given claims, then they are listed by prefix in name order', () => {
    let claims = EMPTY_CLAIMS;
    for (const [name, owner] of [['g/p02', 'a'], ['g/p01', 'b'], ['h/p01', 'b']] as const) claims = takeClaim(claims, name, owner, at(10), at(0)).document!;
    expect(claimsWithPrefix(claims, 'g/').map((claim) => `${claim.name}=${claim.owner}`)).toEqual(['g/p01=b', 'g/p02=a']);
  });

  it('given a document read back, then one of the right shape is kept and a foreign one refused', () => {
    const leases = renewLease(EMPTY_LEASES, 'a', at(10), at(0));
    expect(leasesDocumentOf(JSON.parse(JSON.stringify(leases)))).toEqual(leases);
    const claims = takeClaim(EMPTY_CLAIMS, 'p', 'a', at(10), at(0)).document!;
    expect(claimsDocumentOf(JSON.parse(JSON.stringify(claims)))).toEqual(claims);
    expect(() => leasesDocumentOf({ leases: [{ holder: 'a' }] })).toThrow(/not one this store wrote/);
    expect(() => claimsDocumentOf('text')).toThrow(/not one this store wrote/);
  });
});
