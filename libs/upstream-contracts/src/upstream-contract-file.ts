import { Document, type YAMLMap, type YAMLSeq } from 'yaml';
import { checkContractFile } from '@oncegate/contracts';
import { classFromAnnotations } from '@oncegate/mcp-upstream';
import { UnknownUpstreamToolError, UpstreamContractError } from './upstream-errors';
import {
  oncegateToolName,
  upstreamToolEntry,
  YAML_OUTPUT,
  type UpstreamClass,
  type UpstreamEndpoint,
  type UpstreamTool,
} from './upstream-tool-entry';

/** What `oncegate upstream add` writes a contract file from. */
export interface UpstreamContractInput {
  /** The upstream's name (`^[a-z][a-z0-9-]*$`): the prefix of its tools' names and their target `mcp/<name>`. */
  readonly upstream: string;
  readonly endpoint: UpstreamEndpoint;
  readonly credentialRef?: string;
  /** The upstream's tools, every page of its `tools/list`, in its order. */
  readonly listing: readonly UpstreamTool[];
  /** The operator's classes, by upstream tool name (`--class`). */
  readonly classes?: ReadonlyMap<string, UpstreamClass>;
  /** Only these upstream tools (`--only`); all when absent. */
  readonly only?: readonly string[];
  /** The file's name, for the check of what is written. */
  readonly file: string;
  /**
   * The path of schemas/tools.schema.json relative to the file's folder, when the schema is at hand: the file's first
   * line names it, so that an editor with the YAML language server checks the file as it is edited.
   */
  readonly schemaPath?: string;
  /** What the header says of where the file came from. */
  readonly origin: {
    /** The URL, or the command line. */
    readonly source: string;
    /** `name version` of the server, as it introduced itself. */
    readonly server?: string;
    readonly protocolVersion?: string;
    /** ISO 8601: when the listing was read (the clock is the caller's). */
    readonly writtenAt: string;
  };
}

/** One tool written. */
export interface WrittenTool {
  readonly upstreamTool: string;
  readonly name: string;
  readonly operationClass: UpstreamClass;
  /** True when the class is the operator's (`--class`), which `accept` keeps. */
  readonly overridden: boolean;
}

/** An upstream tool left out, and every reason the contract format gave. */
export interface LeftOutTool {
  readonly upstreamTool: string;
  readonly reasons: readonly string[];
}

export interface UpstreamContract {
  readonly text: string;
  readonly written: readonly WrittenTool[];
  readonly leftOut: readonly LeftOutTool[];
}

/** Names given to `--class` or `--only` that the upstream does not list. */
function checkNamed(option: string, names: Iterable<string>, listing: readonly UpstreamTool[]): void {
  const available = listing.map((tool) => tool.name);
  const unknown = [...names].filter((name) => !available.includes(name));
  if (unknown.length > 0) throw new UnknownUpstreamToolError(option, unknown, available);
}

/** The file's opening comment: where it came from, when, and that it is the operator's to edit. */
function header(input: UpstreamContractInput): string {
  const { upstream, origin } = input;
  const modeline = input.schemaPath === undefined ? [] : [` yaml-language-server: $schema=${input.schemaPath}`];
  const about = [origin.server, origin.protocolVersion === undefined ? undefined : `MCP ${origin.protocolVersion}`].filter((part) => part !== undefined).join(', ');
  return [
    ...modeline,
    ` Tools of the upstream MCP server '${upstream}' at ${origin.source}${about === '' ? '' : ` (${about})`},`,
    ` written by \`oncegate upstream add\` on ${origin.writtenAt} from its tools/list (docs/contracts.md, "Upstream MCP servers").`,
    ' Meant to be edited: names, descriptions, classes, windows and approvals are yours. A class followed by a comment',
    " starting with 'override' is kept by `oncegate upstream accept`; the others follow the upstream's annotations.",
    ` \`oncegate upstream diff ${upstream}\` compares this file with the live server, \`oncegate upstream accept ${upstream}\` takes its changes.`,
  ].join('\n');
}

/** The file's text with `tools` as its entries. */
function render(input: UpstreamContractInput, tools: readonly UpstreamTool[]): { text: string; written: WrittenTool[] } {
  const doc = new Document({ version: 1 });
  doc.commentBefore = header(input);
  const taken = new Set<string>();
  const written: WrittenTool[] = [];
  const entries = tools.map((tool) => {
    const name = oncegateToolName(input.upstream, tool.name, taken);
    taken.add(name);
    const classOverride = input.classes?.get(tool.name);
    const annotationsGive = classFromAnnotations(tool.annotations) as UpstreamClass;
    written.push({ upstreamTool: tool.name, name, operationClass: classOverride ?? annotationsGive, overridden: classOverride !== undefined });
    return upstreamToolEntry(doc, {
      upstream: input.upstream,
      endpoint: input.endpoint,
      ...(input.credentialRef === undefined ? {} : { credentialRef: input.credentialRef }),
      tool,
      name,
      ...(classOverride === undefined ? {} : { classOverride }),
    });
  });
  const list = doc.createNode([]) as YAMLSeq<YAMLMap>;
  list.items = entries;
  doc.set('tools', list);
  return { text: doc.toString(YAML_OUTPUT), written };
}

/** `tools[3].input_schema.properties` → index 3 and `input_schema.properties`; `undefined` for a path outside the tools. */
function toolOf(path: string): { index: number; rest: string } | undefined {
  const match = /^tools\[(\d+)\](?:\.(.*))?$/.exec(path);
  return match === null ? undefined : { index: Number(match[1]), rest: match[2] ?? '' };
}

/**
 * The contract file of an upstream's tools (docs/contracts.md format): one entry per tool listed (or per `only` tool),
 * each checked as the gateway will check it. A tool the format refuses (an input schema it cannot take, for one) is
 * left out with the reasons, and the others are written.
 *
 * @throws UnknownUpstreamToolError when `classes` or `only` name a tool the upstream does not list
 * @throws UpstreamContractError when no tool is left to write
 */
export function upstreamContractFile(input: UpstreamContractInput): UpstreamContract {
  checkNamed('--class', input.classes?.keys() ?? [], input.listing);
  checkNamed('--only', input.only ?? [], input.listing);
  let candidates = input.listing.filter((tool) => input.only === undefined || input.only.includes(tool.name));
  if (candidates.length === 0) throw new UpstreamContractError(`the upstream '${input.upstream}' lists no tools`, []);
  const leftOut: LeftOutTool[] = [];
  // A tool's problems are its own (names are made unique here), so one pass finds every tool to leave out; the second
  // check proves the rest is a valid file.
  for (let pass = 0; pass < 2; pass += 1) {
    const { text, written } = render(input, candidates);
    const result = checkContractFile(text, input.file);
    if (result.ok) return { text, written, leftOut };
    const reasons = new Map<number, string[]>();
    for (const issue of result.issues) {
      const at = toolOf(issue.path);
      if (at === undefined) throw new Error(`the contract written for '${input.upstream}' is refused outside its tools: ${issue.path}: ${issue.reason}`);
      reasons.set(at.index, [...(reasons.get(at.index) ?? []), `${at.rest === '' ? '' : `${at.rest}: `}${issue.reason}`]);
    }
    for (const [index, found] of reasons) leftOut.push({ upstreamTool: candidates[index]!.name, reasons: found });
    candidates = candidates.filter((_tool, index) => !reasons.has(index));
    if (candidates.length === 0) throw new UpstreamContractError(`no tool of '${input.upstream}' can be written: the contract format refuses each one`, leftOut);
  }
  throw new Error(`the contract written for '${input.upstream}' was refused twice`);
}

/**
 * Why the contract format refuses the entry of one upstream tool (as `add` would write it, reached as `endpoint`);
 * empty when it takes it. `diff` and `accept` tell a tool they could add from one nobody can.
 */
export function entryRefusals(upstream: string, endpoint: UpstreamEndpoint, tool: UpstreamTool): string[] {
  const doc = new Document({ version: 1 });
  const list = doc.createNode([]) as YAMLSeq<YAMLMap>;
  list.items = [upstreamToolEntry(doc, { upstream, endpoint, tool, name: oncegateToolName(upstream, tool.name, new Set()) })];
  doc.set('tools', list);
  const result = checkContractFile(doc.toString(YAML_OUTPUT), `${upstream}.yaml`);
  return result.ok ? [] : result.issues.map((issue) => `${toolOf(issue.path)?.rest || issue.path}: ${issue.reason}`.replace(/^: /, ''));
}
