import { Document, isMap, isScalar, type Node, type YAMLMap, type YAMLSeq } from 'yaml';
import { classFromAnnotations, definitionDigest } from '@oncegate/mcp-upstream';
import { diffUpstream } from './upstream-diff';
import { UnknownUpstreamToolError, UpstreamContractError } from './upstream-errors';
import {
  annotationsComment,
  compactScalarLists,
  DEFAULT_WINDOWS,
  isUpstreamClass,
  oncegateToolName,
  upstreamToolEntry,
  YAML_OUTPUT,
  type UpstreamTool,
} from './upstream-tool-entry';
import { endpointOf, pairOf, type ContractFileTools, type WrittenUpstreamTool } from './upstream-tools-in-file';

/** What `oncegate upstream accept` is asked to take. */
export interface AcceptRequest {
  readonly upstream: string;
  /** The upstream's tools now, every page. */
  readonly live: readonly UpstreamTool[];
  /** The contract file named and the files it includes, each read with `readContractFileTools`. */
  readonly files: readonly ContractFileTools[];
  /** Only these tools (upstream or Oncegate names, `--tool`); all when absent. */
  readonly tools?: readonly string[];
  /** Add the tools the upstream lists and no entry fronts (`--add`). */
  readonly add: boolean;
  /** Drop the entries of tools the upstream no longer lists (`--remove`). */
  readonly remove: boolean;
}

/** What accepting did, and what it left. */
export interface AcceptResult {
  /** The new text of each file that changed, by file. */
  readonly texts: ReadonlyMap<string, string>;
  /** One line per change made, and per difference left (and why). */
  readonly lines: readonly string[];
}

/** One replacement of the original text: `[start, end)` becomes `text`. */
interface Splice {
  readonly start: number;
  readonly end: number;
  readonly text: string;
}

const lineStart = (text: string, offset: number) => text.lastIndexOf('\n', offset - 1) + 1;
const columnOf = (text: string, offset: number) => offset - lineStart(text, offset);
const indent = (block: string, column: number) =>
  block
    .split('\n')
    .map((line) => (line === '' ? line : `${' '.repeat(column)}${line}`))
    .join('\n');

/** A value written in block style on its own lines, as these commands write every file. */
function blockText(value: unknown): string {
  const doc = new Document(value);
  compactScalarLists(doc.contents as Node);
  return doc.toString(YAML_OUTPUT);
}

/** A plain scalar's replacement: the value itself, keeping what follows it on its line (a comment). */
function scalarSplice(node: Node | null | undefined, value: string): Splice[] {
  if (!isScalar(node) || node.range == null) return [];
  return [{ start: node.range[0], end: node.range[1], text: value }];
}

/**
 * The entry's `input_schema` replaced by `schema`, in block style at the entry's indentation; written the same way
 * when it was a flow mapping on the key's line.
 */
function schemaSplice(text: string, entry: YAMLMap, schema: unknown): Splice[] {
  const pair = pairOf(entry, 'input_schema');
  const node = pair?.value;
  const key = pair?.key;
  if (node?.range == null || key?.range == null) return [];
  if (isMap(node) && !node.flow) {
    const start = lineStart(text, node.range[0]);
    return [{ start, end: node.range[1], text: indent(blockText(schema), columnOf(text, node.range[0])) }];
  }
  const colon = text.indexOf(':', key.range[1]) + 1;
  return [{ start: colon, end: node.range[1], text: `\n${indent(blockText(schema), columnOf(text, key.range[0]) + 2).replace(/\n$/, '')}` }];
}

/** `plugin.definition` set to the live digest, with the annotations it covers recorded after it (a block section only). */
function definitionSplice(text: string, entry: YAMLMap, tool: UpstreamTool): Splice[] {
  const plugin = pairOf(entry, 'plugin')?.value;
  if (!isMap(plugin)) return [];
  const node = pairOf(plugin, 'definition')?.value;
  if (!isScalar(node) || node.range == null) return [];
  if (plugin.flow) return [{ start: node.range[0], end: node.range[1], text: definitionDigest(tool) }];
  const lineEnd = text.indexOf('\n', node.range[1]);
  return [{ start: node.range[0], end: lineEnd === -1 ? text.length : lineEnd, text: `${definitionDigest(tool)} #${annotationsComment(tool.annotations)}` }];
}

/** The whole entry at `index`: from the line of its `- ` to the end of its last line. */
function entrySplice(text: string, tools: YAMLSeq, index: number): Splice[] {
  const item = tools.items[index] as Node | undefined;
  if (item?.range == null) return [];
  let dash = item.range[0] - 1;
  while (dash >= 0 && /\s/.test(text[dash]!)) dash -= 1;
  const start = lineStart(text, text[dash] === '-' ? dash : item.range[0]);
  const end = item.range[1];
  const lineEnd = text[end - 1] === '\n' ? end : text.indexOf('\n', end);
  return [{ start, end: lineEnd === -1 ? text.length : text[end - 1] === '\n' ? end : lineEnd + 1, text: '' }];
}

function applySplices(text: string, splices: readonly Splice[]): string {
  let result = text;
  for (const splice of [...splices].sort((a, b) => b.start - a.start)) result = `${result.slice(0, splice.start)}${splice.text}${result.slice(splice.end)}`;
  return result;
}

/**
 * Rewrites a contract's entries of one upstream to the live definitions: each changed entry's `input_schema` and
 * `definition`, and its class (with the correlation window, while that is still the old class's default) unless the
 * class is the operator's override. New tools are added only with `add`, entries of tools gone are dropped only with
 * `remove`; either way they are reported. The text around every change is kept as it is, comments included.
 *
 * @throws UnknownUpstreamToolError when `tools` names a tool neither the upstream nor the contract has
 * @throws UpstreamContractError when a new tool has nowhere to go (no entry of the upstream to take its server from)
 */
export function acceptUpstream(request: AcceptRequest): AcceptResult {
  const written = request.files.flatMap((file) => file.upstreamTools);
  const known = new Set([...request.live.map((tool) => tool.name), ...written.flatMap((entry) => [entry.upstreamTool, entry.name])]);
  const unknown = (request.tools ?? []).filter((name) => !known.has(name));
  if (unknown.length > 0) throw new UnknownUpstreamToolError('--tool', unknown, request.live.map((tool) => tool.name));
  const wanted = (upstreamTool: string, name?: string) => request.tools === undefined || request.tools.includes(upstreamTool) || (name !== undefined && request.tools.includes(name));

  const diff = diffUpstream(request.live, written);
  const splices = new Map<string, Splice[]>(request.files.map((file) => [file.file, []]));
  const lines: string[] = [];
  const fileOf = (name: string) => request.files.find((file) => file.file === name)!;
  const entryNode = (entry: WrittenUpstreamTool) => ((fileOf(entry.file).doc.get('tools', true) as YAMLSeq).items[entry.index] as YAMLMap);

  for (const change of diff.changed) {
    const { written: entry, live, liveClass } = change;
    if (!wanted(live.name, entry.name)) continue;
    const file = fileOf(entry.file);
    const node = entryNode(entry);
    const edits = [...schemaSplice(file.text, node, live.inputSchema), ...definitionSplice(file.text, node, live)];
    let classNote = '';
    if (entry.classOverridden) classNote = `; class ${String(entry.operationClass)} kept (override; the annotations give ${liveClass})`;
    else if (entry.operationClass !== liveClass) {
      edits.push(...scalarSplice(pairOf(node, 'class')?.value, liveClass));
      classNote = `; class ${String(entry.operationClass)} → ${liveClass}`;
      // A window the operator chose stays; the old class's default becomes the new class's.
      if (isUpstreamClass(entry.operationClass) && entry.correlationWindow === DEFAULT_WINDOWS[entry.operationClass]) {
        edits.push(...scalarSplice(pairOf(node, 'correlation_window')?.value, DEFAULT_WINDOWS[liveClass]));
        classNote += `, correlation_window ${DEFAULT_WINDOWS[entry.operationClass]} → ${DEFAULT_WINDOWS[liveClass]}`;
      }
    }
    splices.get(entry.file)!.push(...edits);
    lines.push(`accepted ${live.name}: ${entry.name} in ${entry.file} takes the live input schema and definition${classNote}`);
  }

  for (const entry of diff.removed) {
    if (!wanted(entry.upstreamTool, entry.name)) continue;
    if (!request.remove) {
      lines.push(`kept     ${entry.name} in ${entry.file}: the upstream no longer lists ${entry.upstreamTool} (--remove drops the entry)`);
      continue;
    }
    splices.get(entry.file)!.push(...entrySplice(fileOf(entry.file).text, fileOf(entry.file).doc.get('tools', true) as YAMLSeq, entry.index));
    lines.push(`removed  ${entry.name} from ${entry.file}: the upstream no longer lists ${entry.upstreamTool}`);
  }

  for (const { tool, reasons } of diff.refused) if (wanted(tool.name)) lines.push(`left out ${tool.name}: the contract format refuses it (${reasons.join('; ')})`);
  const added = diff.added.filter((tool) => wanted(tool.name));
  if (added.length > 0 && !request.add) {
    for (const tool of added) lines.push(`not added ${tool.name}: new on the upstream (its annotations give ${classFromAnnotations(tool.annotations)}; --add writes it)`);
  } else if (added.length > 0) {
    const model = written[0];
    if (model === undefined) throw new UpstreamContractError(`no entry of '${request.upstream}' to take its server from: add its new tools with oncegate upstream add`, added.map((tool) => ({ upstreamTool: tool.name, reasons: ['new'] })));
    const file = fileOf(model.file);
    const taken = new Set(request.files.flatMap((each) => each.names));
    const doc = new Document([]);
    const list = doc.contents as YAMLSeq;
    for (const tool of added) {
      const name = oncegateToolName(request.upstream, tool.name, taken);
      taken.add(name);
      list.items.push(upstreamToolEntry(doc, { upstream: request.upstream, endpoint: endpointOf(model), ...(model.credentialRef === undefined ? {} : { credentialRef: model.credentialRef }), tool, name }));
      lines.push(`added    ${tool.name} as ${name} to ${file.file} (${classFromAnnotations(tool.annotations)})`);
    }
    const tools = file.doc.get('tools', true) as YAMLSeq;
    if (tools.flow || tools.range == null) throw new UpstreamContractError(`${file.file}: its tools: list is written in flow style; add the new tools by hand`, []);
    const at = tools.range[1];
    const before = at > 0 && file.text[at - 1] !== '\n' ? '\n' : '';
    splices.get(file.file)!.push({ start: at, end: at, text: `${before}${indent(doc.toString(YAML_OUTPUT), columnOf(file.text, tools.range[0]))}` });
  }

  const texts = new Map<string, string>();
  for (const [name, edits] of splices) if (edits.length > 0) texts.set(name, applySplices(fileOf(name).text, edits));
  return { texts, lines };
}
