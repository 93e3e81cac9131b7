import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ProtocolError, SdkError, SdkErrorCode, SdkHttpError } from '@modelcontextprotocol/client';
import { DEFAULT_CLIENT_INFO, lostOnTheWay } from './oncegate-client';

describe('lostOnTheWay: which failures may hide an answer, so the call is made again with its caller key', () => {
  it.each([
    ['a reset connection (fetch TypeError)', new TypeError('fetch failed')],
    ['a connection the SDK saw close', new SdkError(SdkErrorCode.ConnectionClosed, 'Connection closed')],
    ['a send that failed', new SdkError(SdkErrorCode.SendFailed, 'send failed')],
    ['no answer in time', new SdkError(SdkErrorCode.RequestTimeout, 'Request timed out')],
    ['a gateway restarting (503)', new SdkHttpError(SdkErrorCode.SendFailed, 'HTTP 503', { status: 503 })],
    ['the journal unwritable (-32012)', new ProtocolError(-32012, 'Storage unavailable')],
    ['a socket error code', Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' })],
  ])('%s: lost on the way', (_what, error) => {
    expect(lostOnTheWay(error)).toBe(true);
  });

  it.each([
    ['invalid arguments (-32602)', new ProtocolError(-32602, "Invalid arguments for 'set_config'")],
    ['a caller key reused for another intent (-32010)', new ProtocolError(-32010, 'The idempotency key was already used')],
    ['an unknown execution (-32011)', new ProtocolError(-32011, 'No execution')],
    ['a refused token (401)', new SdkHttpError(SdkErrorCode.SendFailed, 'HTTP 401', { status: 401 })],
    ['a plain error', new Error('something else')],
  ])('%s: an answer, not made again', (_what, error) => {
    expect(lostOnTheWay(error)).toBe(false);
  });
});

describe('the client info a connection gives when the caller gives none', () => {
  it('given the package manifest, then its version is the version of the package (bumped together)', () => {
    const manifest = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string };
    expect(DEFAULT_CLIENT_INFO.version).toBe(manifest.version);
  });
});
