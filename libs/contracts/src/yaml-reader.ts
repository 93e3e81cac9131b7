import { isAlias, isMap, isScalar, isSeq, LineCounter, parseDocument, type Document, type Node, type YAMLMap } from 'yaml';
import type { ContractIssue } from './contract-issue';
import { closestMatch, didYouMean } from './suggest';

/** Shared state of one pass over a contract file: the document, positions and every issue found so far. */
export class YamlContext {
  readonly issues: ContractIssue[] = [];

  constructor(
    readonly file: string,
    readonly doc: Document,
    private readonly lineCounter: LineCounter,
  ) {}

  positionOf(offset: number): { line: number; column: number } {
    const { line, col } = this.lineCounter.linePos(offset);
    return { line, column: col };
  }

  /** Records an issue at a node (or at the fallback node, or line 1, when the node has no position). */
  report(node: Node | null | undefined, path: string, reason: string): void {
    const offset = node?.range?.[0] ?? 0;
    this.issues.push({ file: this.file, path, ...this.positionOf(offset), reason });
  }

  /** Follows an alias to the node it names. */
  resolve(node: unknown): Node | null {
    if (isAlias(node)) return (node.resolve(this.doc) as Node | undefined) ?? null;
    return (node as Node | null | undefined) ?? null;
  }

  toJS(node: Node): unknown {
    return node.toJS(this.doc);
  }
}

/**
 * Parses YAML text for one of our file formats: syntax errors are reported with their position, and an empty
 * document is `undefined` so the caller can say what the file should hold.
 */
export function openYamlDocument(text: string, file: string): { ctx: YamlContext; root: Node | undefined } {
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, { lineCounter, prettyErrors: false, merge: true, uniqueKeys: true });
  const ctx = new YamlContext(file, doc, lineCounter);
  for (const error of doc.errors) {
    ctx.issues.push({ file, path: '', ...ctx.positionOf(error.pos[0]), reason: `YAML syntax: ${error.message}` });
  }
  const empty = doc.contents === null || text.trim() === '';
  return { ctx, root: doc.errors.length > 0 || empty ? undefined : (doc.contents as Node) };
}

/** `tools[2]`, `http.method`, `headers["Idempotency-Key"]`. */
export function childPath(parent: string, key: string | number): string {
  if (typeof key === 'number') return `${parent}[${key}]`;
  if (/^[A-Za-z_][A-Za-z0-9_]*$/.test(key)) return parent === '' ? key : `${parent}.${key}`;
  return `${parent}["${key.replaceAll('"', '\\"')}"]`;
}

/** `mapping`, `list`, `string`, `number`, `boolean` or `nothing`, for "must be X, got Y" messages. */
export function describeNode(node: Node | null): string {
  if (node === null) return 'nothing';
  if (isMap(node)) return 'a mapping';
  if (isSeq(node)) return 'a list';
  if (isScalar(node)) {
    const value = node.value;
    if (value === null || value === undefined) return 'nothing';
    if (typeof value === 'string') return `the string '${value}'`;
    return `${typeof value === 'number' ? 'the number' : typeof value === 'boolean' ? 'the boolean' : 'the value'} ${String(value)}`;
  }
  return 'an unsupported value';
}

interface Entry {
  readonly key: Node;
  readonly value: Node | null;
}

/**
 * The fields of one YAML mapping (merge keys `<<: *anchor` expanded), read field by field.
 * Readers report problems to the context and return `undefined`, so one pass finds every problem.
 */
export class MapReader {
  private readonly entries = new Map<string, Entry>();
  /** Known fields an unknown field was taken for a typo of; their absence is already explained. */
  private readonly misspelled = new Set<string>();

  private constructor(
    readonly ctx: YamlContext,
    readonly node: YAMLMap,
    readonly path: string,
  ) {
    this.collect(node, true);
  }

  /** A reader for `node`, or `undefined` (reported) when it is not a mapping. */
  static of(ctx: YamlContext, node: Node | null, path: string, at: Node | null = node): MapReader | undefined {
    const resolved = ctx.resolve(node);
    if (!isMap(resolved)) {
      ctx.report(resolved ?? at, path, `must be a mapping, got ${describeNode(resolved)}`);
      return undefined;
    }
    return new MapReader(ctx, resolved, path);
  }

  private collect(map: YAMLMap, own: boolean): void {
    for (const pair of map.items) {
      const key = pair.key as Node;
      if (isScalar(key) && (key.source === '<<' || typeof key.value === 'symbol')) {
        const source = this.ctx.resolve(pair.value);
        const sources = isSeq(source) ? source.items.map((item) => this.ctx.resolve(item)) : [source];
        for (const merged of sources) if (isMap(merged)) this.collect(merged, false);
        continue;
      }
      if (!isScalar(key) || (typeof key.value !== 'string' && typeof key.value !== 'number')) {
        this.ctx.report(key, this.path, 'field names must be plain strings');
        continue;
      }
      const name = String(key.value);
      // Own fields override merged ones; the YAML parser already refuses duplicate own keys.
      if (own || !this.entries.has(name)) {
        this.entries.set(name, { key, value: this.ctx.resolve(pair.value) });
      }
    }
  }

  keys(): string[] {
    return [...this.entries.keys()];
  }

  has(name: string): boolean {
    return this.entries.has(name);
  }

  fieldPath(name: string): string {
    return childPath(this.path, name);
  }

  keyNode(name: string): Node | undefined {
    return this.entries.get(name)?.key;
  }

  /**
   * Reports every field not in `known`, with the closest known name, or `hints[field]` when the field is
   * valid somewhere else.
   */
  rejectUnknown(known: readonly string[], hints: Readonly<Record<string, string>> = {}): void {
    for (const [name, entry] of this.entries) {
      if (known.includes(name)) continue;
      const hint = hints[name];
      const match = hint === undefined ? closestMatch(name, known) : undefined;
      if (match !== undefined) this.misspelled.add(match);
      const suggestion = match === undefined ? '' : ` — did you mean '${match}'?`;
      const reason = hint === undefined ? `unknown field '${name}'${suggestion}` : `unknown field '${name}' — ${hint}`;
      this.ctx.report(entry.key, this.fieldPath(name), reason);
    }
  }

  /** The value node of a field: `undefined` when absent, `null` when present without a value. */
  value(name: string): Node | null | undefined {
    const entry = this.entries.get(name);
    if (entry === undefined) return undefined;
    const value = entry.value;
    if (value === null || (isScalar(value) && (value.value === null || value.value === undefined))) return null;
    return value;
  }

  /** The value node of a required field, or `undefined` (reported) when absent or empty. */
  required(name: string, what = ''): Node | undefined {
    const value = this.value(name);
    if (value === undefined) {
      if (this.misspelled.has(name)) return undefined;
      this.ctx.report(this.node, this.fieldPath(name), `missing required field '${name}'${what}`);
      return undefined;
    }
    if (value === null) {
      this.ctx.report(this.keyNode(name), this.fieldPath(name), `'${name}' has no value`);
      return undefined;
    }
    return value;
  }

  /** The value node of an optional field; an empty value counts as absent. */
  optional(name: string): Node | undefined {
    return this.value(name) ?? undefined;
  }

  /** Reports a field that must not be present. */
  forbid(name: string, reason: string): void {
    if (this.has(name)) this.ctx.report(this.keyNode(name), this.fieldPath(name), reason);
  }
}

/** A scalar string (numbers too when `coerce`), or `undefined` (reported). */
export function readString(ctx: YamlContext, node: Node, path: string, options: { coerce?: boolean; nonEmpty?: boolean } = {}): string | undefined {
  if (isScalar(node)) {
    const value = node.value;
    if (typeof value === 'string') {
      if (options.nonEmpty !== false && value.trim() === '') {
        ctx.report(node, path, 'must not be empty');
        return undefined;
      }
      return value;
    }
    if (options.coerce && (typeof value === 'number' || typeof value === 'boolean')) return String(value);
  }
  ctx.report(node, path, `must be a string, got ${describeNode(node)}`);
  return undefined;
}

export function readBoolean(ctx: YamlContext, node: Node, path: string): boolean | undefined {
  if (isScalar(node) && typeof node.value === 'boolean') return node.value;
  ctx.report(node, path, `must be true or false, got ${describeNode(node)}`);
  return undefined;
}

export function readInteger(ctx: YamlContext, node: Node, path: string, min: number, max: number): number | undefined {
  if (isScalar(node) && typeof node.value === 'number' && Number.isInteger(node.value)) {
    if (node.value >= min && node.value <= max) return node.value;
    ctx.report(node, path, `must be between ${min} and ${max}, got ${node.value}`);
    return undefined;
  }
  ctx.report(node, path, `must be a whole number, got ${describeNode(node)}`);
  return undefined;
}

/** One of `allowed` (compared exactly unless `caseInsensitive`), or `undefined` (reported, listing the allowed values). */
export function readEnum<T extends string>(
  ctx: YamlContext,
  node: Node,
  path: string,
  allowed: readonly T[],
  options: { caseInsensitive?: boolean } = {},
): T | undefined {
  const value = isScalar(node) ? node.value : undefined;
  if (typeof value === 'string') {
    const found = allowed.find((candidate) =>
      options.caseInsensitive ? candidate.toLowerCase() === value.toLowerCase() : candidate === value,
    );
    if (found !== undefined) return found;
  }
  const shown = typeof value === 'string' ? `'${value}'` : describeNode(node);
  const hint = typeof value === 'string' ? didYouMean(value, allowed) : '';
  ctx.report(node, path, `${shown} is not allowed; expected one of: ${allowed.join(', ')}${hint}`);
  return undefined;
}

/** A list node's items (aliases resolved), or `undefined` (reported). */
export function readList(ctx: YamlContext, node: Node, path: string): { node: Node | null; path: string }[] | undefined {
  if (!isSeq(node)) {
    ctx.report(node, path, `must be a list, got ${describeNode(node)}`);
    return undefined;
  }
  return node.items.map((item, index) => ({ node: ctx.resolve(item), path: childPath(path, index) }));
}

/** A list of strings; bad items are reported and skipped. */
export function readStringList(ctx: YamlContext, node: Node, path: string, options: { coerce?: boolean } = {}): string[] | undefined {
  const items = readList(ctx, node, path);
  if (items === undefined) return undefined;
  const strings: string[] = [];
  let ok = true;
  for (const item of items) {
    const value = item.node === null ? undefined : readString(ctx, item.node, item.path, options);
    if (item.node === null) ctx.report(node, item.path, 'must be a string, got nothing');
    if (value === undefined) ok = false;
    else strings.push(value);
  }
  return ok ? strings : undefined;
}

/** The child of a mapping (by key) or a list (by index), aliases resolved; `null` when there is none. */
export function childNode(ctx: YamlContext, node: Node | null, segment: string): Node | null {
  if (isMap(node)) {
    const pair = node.items.find((item) => isScalar(item.key) && String(item.key.value) === segment);
    return pair === undefined ? null : (ctx.resolve(pair.value) ?? (pair.key as Node));
  }
  if (isSeq(node) && /^\d+$/.test(segment)) return ctx.resolve(node.items[Number(segment)]);
  return null;
}

/** The node at a JSON pointer below `node`; the deepest node found when the pointer runs off. */
export function nodeAtPointer(ctx: YamlContext, node: Node, segments: readonly string[]): Node {
  let current: Node = node;
  for (const segment of segments) {
    const next = childNode(ctx, current, segment);
    if (next === null) return current;
    current = next;
  }
  return current;
}

/** Splits a JSON pointer (`/a/b~1c`) into unescaped segments. */
export function pointerSegments(pointer: string): string[] {
  if (pointer === '' || pointer === '#') return [];
  return pointer
    .replace(/^#/, '')
    .split('/')
    .slice(1)
    .map((segment) => segment.replaceAll('~1', '/').replaceAll('~0', '~'));
}

/** `base` extended by pointer segments as a YAML path: `input_schema.properties.x.type`, `...allOf[0]`. */
export function pathOfSegments(ctx: YamlContext, base: string, node: Node, segments: readonly string[]): string {
  let path = base;
  let current: Node | null = node;
  for (const segment of segments) {
    path = childPath(path, isSeq(current) && /^\d+$/.test(segment) ? Number(segment) : segment);
    current = childNode(ctx, current, segment);
  }
  return path;
}
