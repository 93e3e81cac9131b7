import { describe, expect, it } from 'vitest';
import { describeCredential, isCredentialName } from './secret-detection';

describe('describeCredential', () => {
  it.each([
    ['Bearer 0123456789abcdef', 'an Authorization credential'],
    ['Basic dXNlcjpwYXNz', 'an Authorization credential'],
    ['-----BEGIN OPENSSH PRIVATE KEY-----', 'a private key'],
    ['eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.abc', 'a JSON Web Token'],
    ['sk_live_51Habcdefghijklmnop', 'an API secret key'],
    ['ghp_abcdefghijklmnopqrstuvwxyz0123456789', 'an access token'],
    ['AKIAIOSFODNN7EXAMPLE', 'a cloud access key'],
    ['Q2hhbmdlTWUhVGhpc0lzQVJlYWxTZWNyZXQxMjM0NTY3OA', 'a token'],
    // Still a token when it sits in a path, or is cut by separators: what is not a word is random enough.
    ['https://hooks.example/services/T0A1B2C3D/B4E5F6G7H/aB3dE5fG7hI9jK1lM3nO5pQ7', 'a token'],
    ['/api/v1/Q2hhbmdlTWUhVGhpc0lzQVJlYWxTZWNyZXQxMjM0NTY3OA/items', 'a token'],
    ['Q2hhbmdl-TWUhVGhp_c0lzQVJlYWxTZWNyZXQxMjM0NTY3OA', 'a token'],
  ])('given %j, when inspected, then it is %s', (text, what) => {
    expect(describeCredential(text)).toBe(what);
  });

  it.each([
    ['application/json'],
    ['http://127.0.0.1:8790/builds/{{args.build_id}}'],
    ['3f786850e387550fdab836ed7e6dc881de23001b'],
    ['0190d3c4-7b1e-7cc2-9a43-2b7f8e1d6c55'],
    ['ThisIsAVeryLongCamelCaseIdentifier'],
    ['/usr/local/bin/demo-migrate'],
    // Temporary paths as mktemp makes them: one random name among words.
    ['/tmp/tmp.XXXXXX'],
    ['/tmp/tmp.Xo8fT3kQ1z/oncegate-markers/deploy'],
    ['/tmp/oncegate-ssh-Xo8fT3/markers/run/AbC9'],
    ['Xo8fT3kQ1z/oncegate-e2e-AbC123/markers/dir'],
    ['/var/folders/x7/Kq3Lm9Zp2Ab/T/oncegate-Xo8fT3/markers'],
  ])('given %j, when inspected, then it is not a credential', (text) => {
    expect(describeCredential(text)).toBeUndefined();
  });
});

describe('isCredentialName', () => {
  it.each(['X-Api-Key', 'api_key', 'access_token', 'password', 'client_secret', 'X-Auth'])('given %s, then it names a credential', (name) => {
    expect(isCredentialName(name)).toBe(true);
  });

  it.each(['Content-Type', 'card_token_hint', 'Idempotency-Key', 'oauth_scope', 'secretary'])('given %s, then it does not', (name) => {
    expect(isCredentialName(name)).toBe(false);
  });
});
