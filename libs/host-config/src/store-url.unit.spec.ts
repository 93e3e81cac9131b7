import { describe, expect, it } from 'vitest';
import { isPostgresUrl, redactedStoreUrl, withoutStorePassword } from './store-url';

describe('the store URL as it may be shown', () => {
  it('given a password in the user-info or the query, when shown, then each is ***', () => {
    expect(redactedStoreUrl('postgres://oncegate:s3cr%40t@db:5432/oncegate?sslmode=require&password=other')).toBe(
      'postgres://oncegate:***@db:5432/oncegate?sslmode=require&password=***',
    );
    expect(redactedStoreUrl('postgres://oncegate@db/oncegate')).toBe('postgres://oncegate@db/oncegate');
    expect(redactedStoreUrl('not a url with s3cret')).toBe('(not a URL)');
  });

  it('given a text carrying the URL or its password, when scrubbed, then neither the encoded nor the decoded password is left', () => {
    const url = 'postgres://oncegate:s3cr%40t@db/oncegate';
    expect(withoutStorePassword(`cannot reach ${url}: s3cr@t refused, s3cr%40t`, url)).toBe('cannot reach postgres://oncegate:***@db/oncegate: *** refused, ***');
  });

  it('knows a PostgreSQL URL by its scheme', () => {
    expect(isPostgresUrl('postgres://db/x')).toBe(true);
    expect(isPostgresUrl('postgresql://db/x')).toBe(true);
    expect(isPostgresUrl('mysql://db/x')).toBe(false);
    expect(isPostgresUrl('db:5432')).toBe(false);
  });
});
