import { isMap, isScalar, isSeq, type Node } from 'yaml';
import type { ArgumentIndex } from './argument-index';
import { reservedHeaderReason } from './request-headers';
import { CREDENTIAL_HEADERS, describeCredential, isCredentialName } from './secret-detection';
import { didYouMean } from './suggest';
import { scanTemplates, type TemplateScan } from './template';
import { childNode, childPath, describeNode, keyNodeAt, type YamlContext } from './yaml-reader';

/** What template and secret checks of one tool need to know. */
export interface ToolScope {
  readonly ctx: YamlContext;
  /** `undefined` when the input schema was unusable: argument references are then not checked. */
  readonly args: ArgumentIndex | undefined;
  readonly secrets: ReadonlySet<string>;
}

const BY_REFERENCE = 'credentials come by reference only: name the credential in credential_ref and the gateway applies it at dispatch';

/** Does a reference to `argument` carry a secret argument (the secret itself, inside it, or containing it)? */
function touchesSecret(scope: ToolScope, argument: string): string | undefined {
  for (const secret of scope.secrets) {
    if (argument === secret || argument.startsWith(`${secret}.`) || secret.startsWith(`${argument}.`)) return secret;
  }
  return undefined;
}

/**
 * Checks the templates of one string: well formed, every `{{args.x}}` declared in the input schema, and — when
 * `secretsForbidden` gives the reason — no secret argument. Returns the scan when there were no problems.
 */
export function checkTemplates(scope: ToolScope, node: Node, path: string, text: string, secretsForbidden?: string): TemplateScan | undefined {
  const scan = scanTemplates(text);
  let ok = true;
  for (const problem of scan.problems) {
    scope.ctx.report(node, path, problem);
    ok = false;
  }
  for (const reference of scan.references) {
    if (reference.kind !== 'argument') continue;
    if (scope.args !== undefined && !scope.args.has(reference.argument)) {
      const hint = didYouMean(reference.argument, scope.args.topLevelNames());
      scope.ctx.report(node, path, `'{{args.${reference.argument}}}' refers to an argument input_schema.properties does not declare${hint}`);
      ok = false;
    }
    const secret = touchesSecret(scope, reference.argument);
    if (secret !== undefined && secretsForbidden !== undefined) {
      scope.ctx.report(node, path, `secret argument '${secret}' must not appear here: ${secretsForbidden}`);
      ok = false;
    }
  }
  return ok ? scan : undefined;
}

/** Refuses a literal (non-template) part of a string that looks like a credential. */
export function checkNoLiteralCredential(scope: ToolScope, node: Node, path: string, text: string): boolean {
  const what = describeCredential(text.replace(/\{\{.*?\}\}/g, ' '));
  if (what === undefined) return true;
  scope.ctx.report(node, path, `looks like ${what} written literally; ${BY_REFERENCE}`);
  return false;
}

const ORIGIN = /^([A-Za-z][A-Za-z0-9+.-]*:\/\/)([^/?#]*)/;

/**
 * An absolute http(s) URL template. The scheme, host and port are literal — an argument never chooses where a
 * request goes — there are no credentials in it, and no secret argument (URLs end up in logs and records).
 */
export function checkUrl(scope: ToolScope, node: Node, path: string, text: string): string | undefined {
  const report = (reason: string): undefined => {
    scope.ctx.report(node, path, reason);
    return undefined;
  };
  const scan = checkTemplates(scope, node, path, text, 'URLs are logged and recorded; send it in the body or a header');
  const origin = ORIGIN.exec(text);
  if (origin === null) return report(`'${text}' must be an absolute http:// or https:// URL`);
  if (origin[0].includes('{{')) return report('the scheme, host and port must be literal: an argument must not choose where the request goes');
  let url: URL;
  try {
    url = new URL(text.replace(/\{\{.*?\}\}/g, 'x'));
  } catch {
    return report(`'${text}' is not a valid URL`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return report(`'${url.protocol}' URLs are not supported; use http:// or https://`);
  if (url.username !== '' || url.password !== '') return report(`the URL must not hold credentials; ${BY_REFERENCE}`);
  for (const name of url.searchParams.keys()) {
    if (isCredentialName(name)) return report(`query parameter '${name}' carries a credential; ${BY_REFERENCE}`);
  }
  if (!checkNoLiteralCredential(scope, node, path, text) || scan === undefined) return undefined;
  return text;
}

const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

/**
 * A header-name → value mapping (`headers`, as the file's schema let it through: values are scalars); credential
 * headers and reserved headers (`reservedHeaderReason`) are refused whatever their value.
 */
export function checkHeaders(
  scope: ToolScope,
  node: Node,
  path: string,
  headers: Readonly<Record<string, string | number | boolean>>,
): Record<string, string> | undefined {
  const result: Record<string, string> = {};
  let ok = true;
  for (const [name, written] of Object.entries(headers)) {
    const headerPath = childPath(path, name);
    const keyNode = keyNodeAt(scope.ctx, node, [name]) ?? node;
    const reason = !HEADER_NAME.test(name)
      ? `'${name}' is not a valid HTTP header name`
      : (reservedHeaderReason(name) ??
        ((CREDENTIAL_HEADERS as readonly string[]).includes(name.toLowerCase()) || isCredentialName(name) ? `header '${name}' carries a credential; ${BY_REFERENCE}` : undefined));
    if (reason !== undefined) {
      scope.ctx.report(keyNode, headerPath, reason);
      ok = false;
      continue;
    }
    const value = String(written);
    const valueNode = childNode(scope.ctx, node, name) ?? keyNode;
    const scan = checkTemplates(scope, valueNode, headerPath, value);
    if (scan === undefined || !checkNoLiteralCredential(scope, valueNode, headerPath, value)) ok = false;
    else result[name] = value;
  }
  return ok ? result : undefined;
}

/**
 * A JSON-like value (request body, plugin config): templates only in string values, every reference declared,
 * no literal credentials, and no literal value under a credential-named key.
 */
export function checkJsonTemplate(scope: ToolScope, node: Node, path: string): boolean {
  const { ctx } = scope;
  const resolved = ctx.resolve(node);
  if (resolved === null) return true;
  if (isMap(resolved)) {
    let ok = true;
    for (const pair of resolved.items) {
      const key = pair.key;
      const name = isScalar(key) ? String(key.value) : '';
      const entryPath = childPath(path, name);
      if (name.includes('{{')) {
        ctx.report(key as Node, entryPath, 'templates are allowed in values only, not in field names');
        ok = false;
      }
      const value = ctx.resolve(pair.value);
      if (isCredentialName(name) && isScalar(value) && typeof value.value === 'string' && value.value !== '' && !value.value.includes('{{')) {
        ctx.report(value, entryPath, `'${name}' holds a literal value; ${BY_REFERENCE}`);
        ok = false;
        continue;
      }
      if (value !== null && !checkJsonTemplate(scope, value, entryPath)) ok = false;
    }
    return ok;
  }
  if (isSeq(resolved)) {
    return resolved.items
      .map((item, index) => {
        const value = ctx.resolve(item);
        return value === null || checkJsonTemplate(scope, value, childPath(path, index));
      })
      .every(Boolean);
  }
  if (isScalar(resolved)) {
    if (typeof resolved.value !== 'string') return true;
    const scan = checkTemplates(scope, resolved, path, resolved.value);
    return checkNoLiteralCredential(scope, resolved, path, resolved.value) && scan !== undefined;
  }
  ctx.report(resolved, path, `unsupported value: ${describeNode(resolved)}`);
  return false;
}
