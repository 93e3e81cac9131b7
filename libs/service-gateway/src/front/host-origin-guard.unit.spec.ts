import { describe, expect, it } from 'vitest';
import { checkHostAndOrigin, isLoopbackHost, LOOPBACK_HOSTS } from './host-origin-guard';

const loopback = { allowedHosts: LOOPBACK_HOSTS, allowedOrigins: [] };

describe('Host and Origin checks (DNS-rebinding protection)', () => {
  it('given the loopback rules, when a request names a loopback host on any port, then it is allowed', () => {
    for (const host of ['127.0.0.1:8787', 'localhost:8787', 'LOCALHOST', '[::1]:8787', '127.0.0.1']) {
      expect(checkHostAndOrigin({ host }, loopback), host).toEqual({ allowed: true });
    }
  });

  it('given the loopback rules, when a request names another host, or none, then it is refused naming the header', () => {
    for (const host of ['evil.example', 'evil.example:8787', '127.0.0.1.evil.example', '10.0.0.5:8787', '', 'a b', 'user@127.0.0.1', undefined]) {
      const verdict = checkHostAndOrigin({ host }, loopback);
      expect(verdict.allowed, String(host)).toBe(false);
      if (!verdict.allowed) expect(verdict.reason).toMatch(/^Forbidden: Host '.*' is not a name this gateway answers to/);
    }
  });

  it('given an Origin, when it is the same origin or configured, then it is allowed; a foreign or opaque one is refused', () => {
    const rules = { allowedHosts: ['gateway.example.com', '*.corp.example'], allowedOrigins: ['https://console.example.com'] };
    expect(checkHostAndOrigin({ host: 'gateway.example.com', origin: 'https://gateway.example.com' }, rules).allowed).toBe(true);
    expect(checkHostAndOrigin({ host: 'gateway.example.com', origin: 'https://console.example.com' }, rules).allowed).toBe(true);
    expect(checkHostAndOrigin({ host: 'a.corp.example:8443', origin: 'https://a.corp.example:8443' }, rules).allowed).toBe(true);
    expect(checkHostAndOrigin({ host: 'corp.example' }, rules).allowed).toBe(false);
    for (const origin of ['http://evil.example', 'null', 'not a url', 'https://gateway.example.com.evil.example']) {
      const verdict = checkHostAndOrigin({ host: 'gateway.example.com', origin }, rules);
      expect(verdict.allowed, origin).toBe(false);
      if (!verdict.allowed) expect(verdict.reason).toContain(`Origin '${origin}' is not allowed`);
    }
  });

  it('given a host rule with a port, when the request names another port, then it is refused', () => {
    const rules = { allowedHosts: ['gateway.example.com:8443'], allowedOrigins: [] };
    expect(checkHostAndOrigin({ host: 'gateway.example.com:8443' }, rules).allowed).toBe(true);
    expect(checkHostAndOrigin({ host: 'gateway.example.com:9000' }, rules).allowed).toBe(false);
  });

  it('knows the loopback addresses', () => {
    expect(['127.0.0.1', '127.3.2.1', 'localhost', '::1', '[::1]'].every(isLoopbackHost)).toBe(true);
    expect(['0.0.0.0', '10.0.0.1', '::', 'example.com'].some(isLoopbackHost)).toBe(false);
  });
});
