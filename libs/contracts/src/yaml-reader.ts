import { isAlias, isMap, isScalar, isSeq, LineCounter, parseDocument, type Document, type Node, type Pair, type YAMLMap } from 'yaml';
import type { ContractIssue } from './contract-issue';

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

function isMergeKey(key: unknown): boolean {
  return isScalar(key) && (key.source === '<<' || typeof key.value === 'symbol');
}

/** The pair of a mapping with key `name`: its own, else one merged in with `<<: *anchor` (own keys win). */
function pairOf(ctx: YamlContext, map: YAMLMap, name: string): Pair | undefined {
  const own = map.items.find((item) => isScalar(item.key) && !isMergeKey(item.key) && String(item.key.value) === name);
  if (own !== undefined) return own;
  for (const item of map.items) {
    if (!isMergeKey(item.key)) continue;
    const source = ctx.resolve(item.value);
    for (const merged of isSeq(source) ? source.items.map((entry) => ctx.resolve(entry)) : [source]) {
      const found = isMap(merged) ? pairOf(ctx, merged, name) : undefined;
      if (found !== undefined) return found;
    }
  }
  return undefined;
}

/** The child of a mapping (by key, merge keys followed) or a list (by index), aliases resolved; `null` when there is none. */
export function childNode(ctx: YamlContext, node: Node | null, segment: string | number): Node | null {
  if (isMap(node)) {
    const pair = pairOf(ctx, node, String(segment));
    if (pair === undefined) return null;
    const value = ctx.resolve(pair.value);
    // An empty value has no position of its own: its key stands for it.
    const empty = value === null || (isScalar(value) && value.value === null && (value.source ?? '') === '');
    return empty ? (pair.key as Node) : value;
  }
  if (isSeq(node) && /^\d+$/.test(String(segment))) return ctx.resolve(node.items[Number(segment)]);
  return null;
}

/** The node at `segments` below `root`; the deepest one on the way when a step is missing (a missing field is named at its mapping). */
export function nodeAt(ctx: YamlContext, root: Node, segments: readonly (string | number)[]): Node {
  let current: Node = root;
  for (const segment of segments) {
    const next = childNode(ctx, current, segment);
    if (next === null) return current;
    current = next;
  }
  return current;
}

/** The key node of the field at `segments` (its last step), or `undefined` when there is none. */
export function keyNodeAt(ctx: YamlContext, root: Node, segments: readonly (string | number)[]): Node | undefined {
  const parent = nodeAt(ctx, root, segments.slice(0, -1));
  const last = segments.at(-1);
  return isMap(parent) && last !== undefined ? (pairOf(ctx, parent, String(last))?.key as Node | undefined) : undefined;
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
