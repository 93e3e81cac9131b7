import { Document, isScalar, visit, type YAMLSeq } from 'yaml';
import type { OpenApiImport } from './import-openapi';

/** One tool as the file holds it, with the lines written above it as comments. */
export interface ToolText {
  readonly contract: Readonly<Record<string, unknown>>;
  readonly notes: readonly string[];
}

/** One line of a comment: a note never breaks the comment it is in. */
function line(text: string): string {
  return text.replace(/\s+/g, ' ').trim();
}

/**
 * A contract file (`version: 1`, `tools:`) as YAML text, `header` as comment lines at its top and each tool's notes
 * above it. Lists of plain values are written on one line (`required: [id, body]`); long strings are not folded.
 */
export function contractFileText(tools: readonly ToolText[], header: readonly string[] = []): string {
  const document = new Document({ version: 1, tools: tools.map((tool) => tool.contract) }, { aliasDuplicateObjects: false });
  if (header.length > 0) document.commentBefore = header.map((text) => (text === '' ? '' : ` ${text}`)).join('\n');
  const items = (document.get('tools') as YAMLSeq).items as { commentBefore?: string }[];
  tools.forEach((tool, index) => {
    const item = items[index];
    if (item !== undefined && tool.notes.length > 0) item.commentBefore = tool.notes.map((note) => ` ${line(note)}`).join('\n');
  });
  visit(document, {
    Seq(_, node) {
      if (node.items.length > 0 && node.items.every((item) => isScalar(item) && !String(item.value).includes('\n'))) node.flow = true;
    },
  });
  return document.toString({ lineWidth: 0, flowCollectionPadding: false });
}

/** `getPet (GET /pets/{petId})`, or `GET /pets/{petId}` for an operation without an operationId. */
function operationName(operation: { readonly method: string; readonly path: string; readonly operationId: string | undefined }): string {
  return operation.operationId === undefined ? `${operation.method} ${operation.path}` : `${operation.operationId} (${operation.method} ${operation.path})`;
}

/** The line above a tool: the operation it was made of (its operationId too, when the tool's name is not it). */
function toolHeading(name: string, operation: { readonly method: string; readonly path: string; readonly operationId: string | undefined }): string {
  return `${name}: ${operation.method} ${operation.path}${operation.operationId === undefined || operation.operationId === name ? '' : ` (operationId ${operation.operationId})`}`;
}

/** How a credential's value reaches the vault: never a command-line argument. */
const VALUE_SOURCES = 'the value on standard input, or with --from-env <VARIABLE> or --from-file <path>';

/**
 * The file an import writes: a header that says where it came from, that it is meant to be edited, how to store
 * each credential it names, and what was not imported or not mapped; then each tool with its notes above it.
 */
export function importedFileText(result: OpenApiImport): string {
  const title = line(`${result.title} ${result.apiVersion}`);
  const header = [
    `Tool contracts imported from ${result.source} (${title === '' ? '' : `${title}, `}OpenAPI ${result.openapi}) by oncegate contracts import openapi.`,
    'Meant to be edited: review each tool (its class, correlation_window and the notes above it), then check the file',
    'with: oncegate contracts check <file>. docs/contracts.md ("Importing from OpenAPI") says how each part was mapped.',
  ];
  if (result.credentials.length > 0) {
    header.push('', 'Credentials: store each in the vault before calling the tools that name it,', `${VALUE_SOURCES}:`);
    for (const credential of result.credentials) header.push(`  ${credential.command}`);
  }
  if (result.skipped.length > 0) {
    header.push('', 'Not imported:');
    for (const skipped of result.skipped) header.push(`  ${operationName(skipped.operation)}: ${line(skipped.reasons.join('; '))}`);
  }
  if (result.notes.length > 0) {
    header.push('', 'Not mapped:');
    for (const note of result.notes) header.push(`  ${line(note)}`);
  }
  return contractFileText(
    result.tools.map((tool) => ({ contract: tool.contract, notes: [toolHeading(tool.name, tool.operation), ...tool.notes.map((note) => `- ${note}`)] })),
    header,
  );
}

/**
 * What the command says on standard error: what was imported and where it went, what was not imported or not
 * mapped (tool by tool), and the vault commands for the credentials the tools name.
 */
export function importSummary(result: OpenApiImport, written: string | undefined): string[] {
  const classes = (['read_only', 'idempotent_write', 'irreversible'] as const)
    .map((name) => [name, result.tools.filter((tool) => tool.operationClass === name).length] as const)
    .filter(([, count]) => count > 0)
    .map(([name, count]) => `${name} ${count}`)
    .join(', ');
  // With no tool there is no file: nothing is written, with or without --out.
  const into = result.tools.length === 0 ? undefined : written;
  const lines = [`${result.source}: ${result.tools.length} tool${result.tools.length === 1 ? '' : 's'} imported${classes === '' ? '' : ` (${classes})`}${into === undefined ? '' : ` into ${into}`}`];
  if (result.skipped.length > 0) {
    lines.push(`not imported (${result.skipped.length}):`);
    for (const skipped of result.skipped) lines.push(`  ${operationName(skipped.operation)}: ${line(skipped.reasons.join('; '))}`);
  }
  const withNotes = result.tools.filter((tool) => tool.notes.length > 0);
  if (result.notes.length > 0 || withNotes.length > 0) {
    lines.push(result.tools.length === 0 ? 'notes:' : `notes (also written as comments${into === undefined ? '' : ` in ${into}`}, at each tool):`);
    for (const note of result.notes) lines.push(`  ${line(note)}`);
    for (const tool of withNotes) for (const note of tool.notes) lines.push(`  ${tool.name}: ${line(note)}`);
  }
  if (result.credentials.length > 0) {
    lines.push(`credentials: store each in the vault before calling its tools (${VALUE_SOURCES}):`);
    for (const credential of result.credentials) lines.push(`  ${credential.command}`);
  }
  return lines;
}
