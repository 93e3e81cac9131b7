import { describe, expect, it } from 'vitest';
import { pluginServerOf } from './tool-contract';

const section = (config: Record<string, unknown>) => pluginServerOf({ kind: 'plugin', channel: 'any', config });

describe('the server a plugin section names (where its credential must be bound)', () => {
  it('given host and port, then those', () => {
    expect(section({ host: 'db.internal', port: 5432 })).toEqual({ host: 'db.internal', port: 5432 });
  });

  it('given an http(s) url, then its host and its port, or the scheme\'s', () => {
    expect(section({ url: 'http://127.0.0.1:9100/mcp' })).toEqual({ host: '127.0.0.1', port: 9100 });
    expect(section({ url: 'https://mcp.example.com/v1' })).toEqual({ host: 'mcp.example.com', port: 443 });
    expect(section({ url: 'http://mcp.example.com' })).toEqual({ host: 'mcp.example.com', port: 80 });
    expect(section({ url: 'http://[::1]:8080/mcp' })).toEqual({ host: '::1', port: 8080 });
  });

  it('given host and port beside a url, then host and port win', () => {
    expect(section({ host: '10.0.0.5', port: 443, url: 'https://mcp.example.com/v1' })).toEqual({ host: '10.0.0.5', port: 443 });
  });

  it('given no server, a url that is not http(s), or one that does not parse, then none', () => {
    expect(section({ command: ['node', 'server.js'] })).toBeUndefined();
    expect(section({ url: 'file:///tmp/x' })).toBeUndefined();
    expect(section({ url: 'not a url' })).toBeUndefined();
    expect(section({ host: 'db', port: '5432' })).toBeUndefined();
  });
});
