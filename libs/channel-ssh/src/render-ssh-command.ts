import { argumentsWithDefaults, scanTemplates } from '@oncegate/contracts';
import type { SshCommandTemplate, ToolContract } from '@oncegate/contracts';
import { MARKER_PROBE_NAME, MARKER_PROBE_SCRIPT, MARKER_WRAPPER_NAME, MARKER_WRAPPER_SCRIPT } from './marker-scripts';
import { shellQuote } from './shell-quote';

/** The command of one SSH attempt. */
export interface RenderedSshCommand {
  /** The program and its arguments after substitution, each one argument on the host. */
  readonly argv: readonly string[];
  /** The exact string sent in the exec request: built only from literal syntax and `shellQuote`d values. */
  readonly command: string;
}

/**
 * A command that cannot be rendered from its contract and arguments. The message names the tool and where
 * (`argv[2]`, `execution id`, …), never an argument's value: values may be secret.
 */
export class SshRenderError extends Error {
  readonly kind = 'ssh_render' as const;

  constructor(
    readonly tool: string,
    readonly where: string,
    readonly reason: string,
  ) {
    super(`tool '${tool}': ${where}: ${reason}`);
    this.name = 'SshRenderError';
  }
}

/** Execution ids become marker file names on the host: no `/`, no leading `.`, nothing a shell could read. */
const EXECUTION_ID = /^[A-Za-z0-9_-][A-Za-z0-9_.-]{0,127}$/;
const SHELL = '/bin/sh';

/**
 * Renders the command of one SSH attempt (docs/contracts.md "Templates", README.md "Rendering"). Pure.
 *
 * Each argv element is literal or exactly one template (`{{args.x}}`, `{{execution.id}}`); input-schema defaults
 * are filled in first, the way the fingerprint fills them. A string value is used as it is, any other value as
 * JSON text. Every element is then quoted with `shellQuote`, so it reaches the program as one argument.
 *
 * A tool with a `marker` (every `remote_command`) runs under the marker wrapper:
 * `/bin/sh -c '<wrapper>' oncegate-marker '<marker dir>' '<execution id>' '<attempt>' '<cwd or empty>' '<argv>'…`.
 * Any other SSH tool runs `cd -- '<cwd>' && exec '<argv>'…` (or just `exec '<argv>'…`).
 *
 * @throws SshRenderError for a non-SSH tool, an absent argument without default, a value holding NUL or a lone
 *   UTF-16 surrogate (no byte sequence carries it faithfully), an execution id unfit for a file name, or an
 *   attempt that is not a positive integer
 */
export function renderSshCommand(
  tool: ToolContract,
  args: Readonly<Record<string, unknown>>,
  executionId: string,
  attempt: number,
): RenderedSshCommand {
  const template = sshTemplateOf(tool);
  checkExecutionId(tool, executionId);
  if (!Number.isSafeInteger(attempt) || attempt < 1) throw new SshRenderError(tool.name, 'attempt', 'must be a positive integer');
  const filled = argumentsWithDefaults(tool, args);
  const argv = template.argv.map((element, index) => renderElement(tool.name, filled, executionId, element, index));
  if ((argv[0] ?? '').startsWith('-')) throw new SshRenderError(tool.name, 'argv[0]', 'must name a program, not an option');

  const quotedArgv = argv.map(shellQuote).join(' ');
  if (tool.marker === null) {
    const run = `exec ${quotedArgv}`;
    return { argv, command: template.cwd === null ? run : `cd -- ${shellQuote(template.cwd)} && ${run}` };
  }
  const wrapperArgs = [tool.marker.directory, executionId, String(attempt), template.cwd ?? ''].map(shellQuote).join(' ');
  return { argv, command: `${SHELL} -c ${shellQuote(MARKER_WRAPPER_SCRIPT)} ${MARKER_WRAPPER_NAME} ${wrapperArgs} ${quotedArgv}` };
}

/**
 * The probe command for an execution's marker: `/bin/sh -c '<probe>' oncegate-probe '<marker dir>' '<id>'`.
 *
 * @throws SshRenderError for a tool without a marker or an execution id unfit for a file name
 */
export function renderMarkerProbe(tool: ToolContract, executionId: string): string {
  sshTemplateOf(tool);
  if (tool.marker === null) throw new SshRenderError(tool.name, 'marker', 'the tool declares no marker to probe');
  checkExecutionId(tool, executionId);
  const args = [tool.marker.directory, executionId].map(shellQuote).join(' ');
  return `${SHELL} -c ${shellQuote(MARKER_PROBE_SCRIPT)} ${MARKER_PROBE_NAME} ${args}`;
}

/** @throws SshRenderError when the tool is not an SSH tool */
export function sshTemplateOf(tool: ToolContract): SshCommandTemplate {
  if (tool.request.kind !== 'ssh') throw new SshRenderError(tool.name, 'channel', `is '${tool.channel}', not ssh`);
  return tool.request;
}

function checkExecutionId(tool: ToolContract, executionId: string): void {
  if (!EXECUTION_ID.test(executionId)) {
    throw new SshRenderError(tool.name, 'execution id', 'must be 1-128 characters of A-Z a-z 0-9 _ . - and not start with a dot (it names marker files)');
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}


function renderElement(tool: string, args: Readonly<Record<string, unknown>>, executionId: string, element: string, index: number): string {
  const where = `argv[${index}]`;
  const scan = scanTemplates(element);
  if (scan.references.length === 0 && scan.problems.length === 0) return checked(tool, where, element);
  const reference = scan.whole;
  // The contract parser refuses these; checked again because the command line is the last line of defence.
  if (reference === undefined || element.trim() !== element) {
    throw new SshRenderError(tool, where, 'a template must be a whole argv element');
  }
  if (reference.kind === 'execution_id') return checked(tool, where, executionId);
  let current: unknown = args;
  for (const segment of reference.argument.split('.')) {
    if (!isRecord(current) || current[segment] === undefined) {
      throw new SshRenderError(tool, where, `argument '${reference.argument}' is absent and has no default; an argv element cannot be left out`);
    }
    current = current[segment];
  }
  return checked(tool, where, typeof current === 'string' ? current : JSON.stringify(current));
}

/** A value the host receives exactly: no NUL (argv strings end at NUL), valid UTF-16 (so UTF-8 is exact). */
function checked(tool: string, where: string, value: string): string {
  if (value.includes('\0')) throw new SshRenderError(tool, where, 'holds a NUL byte, which no argument can carry');
  if (Buffer.from(value, 'utf8').toString('utf8') !== value) {
    throw new SshRenderError(tool, where, 'holds a lone UTF-16 surrogate, which has no exact UTF-8 form');
  }
  return value;
}
