import { canonicalJson } from '@oncegate/fingerprint';
import { classFromAnnotations, definitionDigest } from '@oncegate/mcp-upstream';
import { entryRefusals } from './upstream-contract-file';
import type { UpstreamClass, UpstreamTool } from './upstream-tool-entry';
import { endpointOf, type WrittenUpstreamTool } from './upstream-tools-in-file';

/** One difference between two JSON values, at a JSON pointer: added, removed, or changed. */
export interface JsonChange {
  readonly op: '+' | '-' | '~';
  readonly pointer: string;
  readonly before?: unknown;
  readonly after?: unknown;
}

const same = (a: unknown, b: unknown) => canonicalJson(a ?? null) === canonicalJson(b ?? null);
const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);
const escape = (key: string) => key.replaceAll('~', '~0').replaceAll('/', '~1');

/**
 * Where two JSON values differ, object member by member (a list, or a value of another kind, is compared whole): what
 * a person reads to see how a schema changed, not a patch.
 */
export function jsonChanges(before: unknown, after: unknown, pointer = ''): JsonChange[] {
  if (same(before, after)) return [];
  if (!isObject(before) || !isObject(after)) return [{ op: '~', pointer, before, after }];
  const keys = [...Object.keys(before), ...Object.keys(after).filter((key) => !Object.hasOwn(before, key))];
  return keys.flatMap((key) => {
    const at = `${pointer}/${escape(key)}`;
    if (!Object.hasOwn(after, key)) return [{ op: '-' as const, pointer: at, before: before[key] }];
    if (!Object.hasOwn(before, key)) return [{ op: '+' as const, pointer: at, after: after[key] }];
    return jsonChanges(before[key], after[key], at);
  });
}

/** A tool whose live definition is not the one its entry was written against. */
export interface ChangedTool {
  readonly written: WrittenUpstreamTool;
  readonly live: UpstreamTool;
  readonly schema: readonly JsonChange[];
  /** How the annotations changed; `undefined` when the file did not record them. */
  readonly annotations: readonly JsonChange[] | undefined;
  /** The class the live annotations give. */
  readonly liveClass: UpstreamClass;
}

/** How an upstream's live tools and a contract's entries of them differ, tool by tool. */
export interface UpstreamDiff {
  /** Tools the upstream lists that no entry fronts. */
  readonly added: readonly UpstreamTool[];
  /** Tools the upstream lists that no entry fronts and the contract format refuses (not a difference one can accept). */
  readonly refused: ReadonlyArray<{ readonly tool: UpstreamTool; readonly reasons: readonly string[] }>;
  /** Entries of tools the upstream no longer lists. */
  readonly removed: readonly WrittenUpstreamTool[];
  readonly changed: readonly ChangedTool[];
  readonly unchanged: readonly WrittenUpstreamTool[];
}

/** Whether anything differs that `accept` could take (a tool the format refuses is said, not counted). */
export function differs(diff: UpstreamDiff): boolean {
  return diff.added.length + diff.removed.length + diff.changed.length > 0;
}

/**
 * Compares the upstream's live tools with the entries written of them: an entry is changed when the digest of the
 * live definition (input and output schemas, annotations) is not its `definition`.
 */
export function diffUpstream(live: readonly UpstreamTool[], written: readonly WrittenUpstreamTool[]): UpstreamDiff {
  const liveByName = new Map(live.map((tool) => [tool.name, tool]));
  const fronted = new Set(written.map((entry) => entry.upstreamTool));
  const removed: WrittenUpstreamTool[] = [];
  const changed: ChangedTool[] = [];
  const unchanged: WrittenUpstreamTool[] = [];
  for (const entry of written) {
    const tool = liveByName.get(entry.upstreamTool);
    if (tool === undefined) removed.push(entry);
    else if (entry.definition === definitionDigest(tool)) unchanged.push(entry);
    else {
      changed.push({
        written: entry,
        live: tool,
        schema: jsonChanges(entry.inputSchema, tool.inputSchema),
        annotations: entry.annotations === undefined ? undefined : jsonChanges(entry.annotations, tool.annotations ?? {}),
        liveClass: classFromAnnotations(tool.annotations) as UpstreamClass,
      });
    }
  }
  const missing = live.filter((tool) => !fronted.has(tool.name));
  const model = written[0];
  const refusals = new Map(missing.map((tool) => [tool, model === undefined ? [] : entryRefusals(String(model.section['upstream']), endpointOf(model), tool)]));
  return {
    added: missing.filter((tool) => refusals.get(tool)!.length === 0),
    refused: missing.flatMap((tool) => (refusals.get(tool)!.length === 0 ? [] : [{ tool, reasons: refusals.get(tool)! }])),
    removed,
    changed,
    unchanged,
  };
}

const shown = (value: unknown) => (value === undefined ? '(none)' : JSON.stringify(value));

function changeLine(change: JsonChange, root: string): string {
  const at = change.pointer === '' ? root : change.pointer;
  switch (change.op) {
    case '+':
      return `+ ${at}: ${shown(change.after)}`;
    case '-':
      return `- ${at}: ${shown(change.before)}`;
    case '~':
      return `~ ${at}: ${shown(change.before)} → ${shown(change.after)}`;
  }
}

/** What the class of a changed entry becomes on `accept`, in words. */
function classNote(change: ChangedTool): string {
  const { written, liveClass } = change;
  if (written.classOverridden) return `the new annotations give ${liveClass}; the file's ${String(written.operationClass)} is an override, which accept keeps`;
  if (written.operationClass === liveClass) return `${liveClass}, as before`;
  return `the new annotations give ${liveClass} (the file has ${String(written.operationClass)}); accept sets ${liveClass}`;
}

/** The diff as a person reads it: one block per tool that differs, then what to do about it. */
export function formatUpstreamDiff(diff: UpstreamDiff, upstream: string): string[] {
  const lines: string[] = [];
  for (const { tool, reasons } of diff.refused) lines.push(`left out ${tool.name}: not in the contract, which refuses it (${reasons.join('; ')})`);
  for (const tool of diff.added) {
    lines.push(`added    ${tool.name}: not in the contract (its annotations give ${classFromAnnotations(tool.annotations)}); accept --add takes it`);
  }
  for (const entry of diff.removed) {
    lines.push(`removed  ${entry.upstreamTool}: the upstream no longer lists it (${entry.name} in ${entry.file}); accept --remove drops it`);
  }
  for (const change of diff.changed) {
    lines.push(`changed  ${change.live.name}: its definition is not the one ${change.written.name} in ${change.written.file} was written against`);
    if (change.schema.length > 0) lines.push('  input_schema:', ...change.schema.map((line) => `    ${changeLine(line, '(the whole schema)')}`));
    if (change.annotations === undefined) lines.push('  annotations: not recorded in the file; now ' + JSON.stringify(change.live.annotations ?? {}));
    else if (change.annotations.length > 0) lines.push('  annotations:', ...change.annotations.map((line) => `    ${changeLine(line, '(all)')}`));
    if (change.schema.length === 0 && change.annotations?.length === 0) lines.push('  its output schema changed (the input schema and annotations are the same)');
    lines.push(`  class: ${classNote(change)}`);
  }
  if (!differs(diff)) return lines;
  const counts = [`${diff.added.length} added`, `${diff.removed.length} removed`, `${diff.changed.length} changed`, `${diff.unchanged.length} unchanged`].join(', ');
  lines.push(`${counts}: oncegate upstream accept ${upstream} rewrites the changed ones (--add, --remove for the others)`);
  return lines;
}
