import type { Node } from 'yaml';
import { checkNoLiteralCredential, checkTemplates, type ToolScope } from './request-checks';
import { hasTemplate } from './template';
import { childNode, childPath } from './yaml-reader';

export const HOST_KEY_TYPES = ['ssh-ed25519', 'ecdsa-sha2-nistp256', 'ecdsa-sha2-nistp384', 'ecdsa-sha2-nistp521', 'ssh-rsa'] as const;

/** SSH wire strings (uint32 length, then bytes) in a public key blob: type name first, then key fields. */
function blobFields(base64: string): string[] | undefined {
  let bytes: string;
  try {
    bytes = atob(base64);
  } catch {
    return undefined;
  }
  const fields: string[] = [];
  let offset = 0;
  while (offset < bytes.length) {
    if (offset + 4 > bytes.length) return undefined;
    const length = ((bytes.charCodeAt(offset) << 24) | (bytes.charCodeAt(offset + 1) << 16) | (bytes.charCodeAt(offset + 2) << 8) | bytes.charCodeAt(offset + 3)) >>> 0;
    offset += 4;
    if (offset + length > bytes.length) return undefined;
    fields.push(bytes.slice(offset, offset + length));
    offset += length;
  }
  return fields;
}

/** True when the blob is a whole public key of the declared type: ed25519 has one 32-byte key, the others two fields. */
function isWholeKey(type: string, base64: string): boolean {
  const fields = blobFields(base64);
  if (fields === undefined || fields[0] !== type) return false;
  if (type === 'ssh-ed25519') return fields.length === 2 && fields[1]?.length === 32;
  return fields.length === 3;
}

/** A pinned host key in OpenSSH public-key form (`ssh-ed25519 AAAA...`, comment dropped), or `undefined` (reported). */
export function checkHostKey(scope: ToolScope, node: Node, path: string, text: string): string | undefined {
  const report = (reason: string): undefined => {
    scope.ctx.report(node, path, reason);
    return undefined;
  };
  const parts = text.trim().split(/\s+/);
  const [type = '', key = ''] = parts;
  if (/^(SHA256|MD5):/.test(type)) {
    return report("pin the full public key ('ssh-ed25519 AAAA...', as printed by ssh-keyscan), not its fingerprint");
  }
  if ((HOST_KEY_TYPES as readonly string[]).includes(key)) {
    return report(`drop the host name '${type}': write the key as '${key} AAAA...'`);
  }
  if (!(HOST_KEY_TYPES as readonly string[]).includes(type)) {
    return report(`'${type}' is not a supported host key type; expected one of: ${HOST_KEY_TYPES.join(', ')}`);
  }
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(key) || !isWholeKey(type, key)) {
    return report(`the key after '${type}' is not a valid ${type} public key (truncated or mistyped?)`);
  }
  return `${type} ${key}`;
}

const HOST = /^(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*|\[?[0-9A-Fa-f:.]+\]?)$/;

/** A literal host name or IP address: a template is named first, since an argument must never choose the host. */
export function checkHost(scope: ToolScope, node: Node, path: string, text: string): string | undefined {
  if (hasTemplate(text)) scope.ctx.report(node, path, 'the host must be literal: an argument must not choose where a command runs');
  else if (!HOST.test(text)) scope.ctx.report(node, path, `'${text}' is not a host name or IP address`);
  else return text;
  return undefined;
}

/** An absolute, literal path without `..` segments. */
export function checkAbsolutePath(scope: ToolScope, node: Node, path: string, text: string): string | undefined {
  if (hasTemplate(text)) scope.ctx.report(node, path, 'must be a literal path, without templates');
  else if (!text.startsWith('/')) scope.ctx.report(node, path, `'${text}' must be an absolute path`);
  else if (text.split('/').includes('..')) scope.ctx.report(node, path, `'${text}' must not contain '..'`);
  else return text;
  return undefined;
}

const SHELLS = ['sh', 'bash', 'dash', 'zsh', 'ksh', 'ash', 'fish', 'csh', 'tcsh'];

/**
 * argv: literal program first; each template a whole element, never spliced into a longer string; no template
 * handed to `sh -c` (that is a shell string by another name); no secret argument (the host's process list
 * shows argv to every user).
 */
export function checkArgv(scope: ToolScope, node: Node, path: string, items: readonly (string | number | boolean)[]): string[] | undefined {
  const argv: string[] = [];
  let ok = true;
  let shellString = false;
  items.forEach((item, index) => {
    const text = String(item);
    const itemPath = childPath(path, index);
    const at = childNode(scope.ctx, node, index) ?? node;
    const scan = checkTemplates(scope, at, itemPath, text, "argv is visible in the host's process list; pass it some other way");
    if (scan === undefined || !checkNoLiteralCredential(scope, at, itemPath, text)) ok = false;
    else if (scan.references.length > 0) {
      if (index === 0) {
        scope.ctx.report(at, itemPath, 'the program (argv[0]) must be literal');
        ok = false;
      } else if (scan.whole === undefined) {
        scope.ctx.report(at, itemPath, `a template must be a whole argv element, never spliced into '${text}': split it into separate elements`);
        ok = false;
      } else if (shellString) {
        scope.ctx.report(at, itemPath, `argv runs a shell with -c: a template here would be interpolated into a shell string`);
        ok = false;
      }
    }
    if (index > 0 && /^-[A-Za-z]*c[A-Za-z]*$/.test(text) && SHELLS.includes((argv[0] ?? '').split('/').pop() ?? '')) shellString = true;
    argv.push(text);
  });
  return ok ? argv : undefined;
}
