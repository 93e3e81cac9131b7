import { describe, expect, it } from 'vitest';
import { BindingSyntaxError, bindingMatches, describeTarget, formatBinding, parseBinding, type BindingTarget } from './credential-bindings';

const http = (url: string): BindingTarget => ({ channel: 'http', url });
const ssh = (host: string, port: number): BindingTarget => ({ channel: 'ssh', host, port });

describe('credential bindings', () => {
  it.each([
    // binding, target, allowed
    ['api.example.com', 'https://api.example.com/v1/x', true],
    ['API.Example.COM', 'https://api.example.com/', true],
    ['api.example.com', 'https://API.EXAMPLE.com/', true],
    ['api.example.com.', 'https://api.example.com/', true],
    ['api.example.com', 'https://other.example.com/', false],
    ['api.example.com', 'https://api.example.com.evil.test/', false],
    // without a port: https on 443 only; plain http needs a binding that names its port
    ['api.example.com', 'http://api.example.com/', false],
    ['api.example.com', 'http://api.example.com:443/', false],
    ['api.example.com', 'https://api.example.com:8443/', false],
    ['api.example.com:443', 'https://api.example.com/', true],
    ['api.example.com:443', 'http://api.example.com/', false],
    ['api.example.com:80', 'http://api.example.com/', true],
    ['api.example.com:8443', 'https://api.example.com:8443/x', true],
    ['127.0.0.1:8790', 'http://127.0.0.1:8790/config/a', true],
    ['127.0.0.1:8790', 'http://localhost:8790/config/a', false],
    ['127.0.0.1:8790', 'http://127.0.0.1:8791/config/a', false],
    ['[::1]:8080', 'http://[::1]:8080/x', true],
    // path prefixes match whole segments
    ['127.0.0.1:8790/config', 'http://127.0.0.1:8790/config', true],
    ['127.0.0.1:8790/config', 'http://127.0.0.1:8790/config/', true],
    ['127.0.0.1:8790/config', 'http://127.0.0.1:8790/config/a/b?x=1', true],
    ['127.0.0.1:8790/config', 'http://127.0.0.1:8790/configx', false],
    ['127.0.0.1:8790/config', 'http://127.0.0.1:8790/payments', false],
    ['127.0.0.1:8790/config', 'http://127.0.0.1:8790/?p=/config', false],
    ['127.0.0.1:8790/config/', 'http://127.0.0.1:8790/config/a', true],
    ['127.0.0.1:8790/', 'http://127.0.0.1:8790/anything', true],
    ['127.0.0.1:8790/Config', 'http://127.0.0.1:8790/config', false],
    // dot segments are resolved before the match; encoded separators a server could decode never match a prefix
    ['127.0.0.1:8790/config', 'http://127.0.0.1:8790/config/../admin', false],
    ['127.0.0.1:8790/config', 'http://127.0.0.1:8790/config/%2e%2e/admin', false],
    ['127.0.0.1:8790/config', 'http://127.0.0.1:8790/config/..%2Fadmin', false],
    ['127.0.0.1:8790/config', 'http://127.0.0.1:8790/config/..%2fadmin', false],
    ['127.0.0.1:8790/config', 'http://127.0.0.1:8790/config/..%5Cadmin', false],
    ['127.0.0.1:8790/config', 'http://127.0.0.1:8790/config/a%20b', true],
    ['127.0.0.1:8790', 'http://127.0.0.1:8790/config/..%2Fadmin', true],
    ['127.0.0.1:8790/config', 'http://user:pw@127.0.0.1:8790/config/a', true],
    ['127.0.0.1:8790/config', 'http://127.0.0.1:8790@evil.test/config/a', false],
  ])('given binding %s, when sending to %s, then allowed is %s', (binding, url, allowed) => {
    expect(bindingMatches(parseBinding(binding, 'http'), http(url))).toBe(allowed);
  });

  it.each([
    ['deploy.example.com', ssh('deploy.example.com', 22), true],
    ['Deploy.Example.com', ssh('deploy.example.COM', 22), true],
    ['deploy.example.com', ssh('deploy.example.com', 2222), false],
    ['deploy.example.com:2222', ssh('deploy.example.com', 2222), true],
    ['deploy.example.com:2222', ssh('deploy.example.com', 22), false],
    ['127.0.0.1:2222', ssh('127.0.0.2', 2222), false],
  ] as const)('given SSH binding %s, when logging in to %o, then allowed is %s', (binding, target, allowed) => {
    expect(bindingMatches(parseBinding(binding, 'ssh'), target)).toBe(allowed);
  });

  it('given an HTTP binding with a path prefix, when the target is an SSH login to that host and port, then it does not match', () => {
    expect(bindingMatches(parseBinding('127.0.0.1:8790/config', 'http'), ssh('127.0.0.1', 8790))).toBe(false);
  });

  it.each([
    ['', 'it is empty'],
    ['https://api.example.com', 'leave out the scheme'],
    ['api.example.com:0', 'out of range'],
    ['api.example.com:70000', 'out of range'],
    ['api example.com', 'not a host name'],
    ['user@api.example.com', 'not a host name'],
    ['api.example.com/a b', 'no spaces, query or fragment'],
    ['api.example.com/a?x=1', 'no spaces, query or fragment'],
    ['api.example.com/a/../b', "no '.' or '..' segment"],
  ])('given the binding text %j, when parsed, then it is refused: %s', (text, reason) => {
    expect(() => parseBinding(text, 'http')).toThrow(BindingSyntaxError);
    expect(() => parseBinding(text, 'http')).toThrow(reason);
  });

  it('given an SSH key binding with a path, when parsed, then it is refused', () => {
    expect(() => parseBinding('deploy.example.com/srv', 'ssh')).toThrow('without a path');
  });

  it('given bindings in any case and with a trailing slash, when formatted, then they are canonical', () => {
    expect(formatBinding(parseBinding('API.example.com:443/Config/', 'http'))).toBe('api.example.com:443/Config');
    expect(formatBinding(parseBinding('Deploy.example.com', 'ssh'))).toBe('deploy.example.com');
  });

  it('given targets, when described for a message, then they read host:port/path without the query', () => {
    expect(describeTarget(http('https://10.0.0.5/payments?x=1'))).toBe('10.0.0.5:443/payments');
    expect(describeTarget(ssh('Deploy.example.com', 22))).toBe('deploy.example.com:22');
  });
});
