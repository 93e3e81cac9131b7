import { isIP } from 'node:net';

/** The names of this machine's loopback interface, allowed by default when the gateway listens on loopback. */
export const LOOPBACK_HOSTS: readonly string[] = ['localhost', '127.0.0.1', '[::1]'];

/** `localhost`, `127.x.x.x` or `::1` (bracketed or not). */
export function isLoopbackHost(host: string): boolean {
  const bare = host.replace(/^\[|\]$/g, '').toLowerCase();
  if (bare === 'localhost' || bare === '::1') return true;
  return isIP(bare) === 4 && bare.startsWith('127.');
}

/** A `listen.allowed_hosts` entry (`name`, `name:port`, `[v6]:port`) that names only this machine's loopback. */
export function isLoopbackAuthority(entry: string): boolean {
  if (entry.startsWith('*.')) return false;
  try {
    return isLoopbackHost(new URL(`http://${entry}`).hostname);
  } catch {
    return false;
  }
}
