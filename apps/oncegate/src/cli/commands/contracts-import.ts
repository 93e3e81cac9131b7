import { writeFile } from 'node:fs/promises';
import { Command } from '@commander-js/extra-typings';
import { checkContractFile, formatIssue } from '@oncegate/contracts';
import {
  CredentialOptionError,
  importedFileText,
  importOpenApi,
  importSummary,
  OpenApiDocumentError,
  readOpenApiDocument,
  ServerUrlError,
  UnknownSelectionError,
  type OpenApiImport,
} from '@oncegate/openapi-import';
import { action, EXIT_CODES, UsageError, type CliIo, type ExitCode } from '@oncegate/host-cli';

interface ImportCommandOptions {
  readonly tag?: string[] | undefined;
  readonly operation?: string[] | undefined;
  readonly out?: string | undefined;
  readonly force?: true | undefined;
  readonly server?: string | undefined;
  readonly credential?: string | undefined;
}

/** An option that may be given again, each value added: `--tag pets --tag store`. */
const repeated = (value: string, previous: string[] | undefined): string[] => [...(previous ?? []), value];

/** Every line of a (multi-line) problem indented under the line that names the document. */
function indented(problem: string): string {
  return problem
    .split('\n')
    .map((text) => `  ${text}`)
    .join('\n');
}

async function importOpenApiCommand(io: CliIo, location: string, options: ImportCommandOptions): Promise<ExitCode> {
  let result: OpenApiImport;
  try {
    const document = await readOpenApiDocument(location);
    result = importOpenApi(document, { tags: options.tag, operations: options.operation, server: options.server, credential: options.credential });
  } catch (error) {
    if (error instanceof OpenApiDocumentError) {
      const [first = '', ...rest] = error.problems;
      io.stderr(`${error.source}: ${first}\n${rest.map((problem) => `${indented(problem)}\n`).join('')}`);
      return EXIT_CODES.failed;
    }
    // What the command line asked for and the document does not have, or cannot be: said as a usage mistake.
    if (error instanceof UnknownSelectionError || error instanceof ServerUrlError || error instanceof CredentialOptionError) throw new UsageError(error.message);
    throw error;
  }
  const summary = importSummary(result, options.out);
  if (result.tools.length === 0) {
    io.stderr(`${summary.join('\n')}\nnothing written: a contract file needs at least one tool\n`);
    return EXIT_CODES.failed;
  }
  const text = importedFileText(result);
  // Each tool passed the check on its own; the file as a whole is checked too, as `contracts check` will check it.
  const checked = checkContractFile(text, options.out ?? 'the imported contracts');
  if (!checked.ok) {
    io.stderr(`the import made a contract file that does not pass its check (nothing written):\n${checked.issues.map((issue) => `  ${formatIssue(issue)}\n`).join('')}`);
    return EXIT_CODES.failed;
  }
  if (options.out === undefined) io.stdout(text);
  else {
    try {
      // Not replaced unless asked: the file is meant to be edited, and an import again would lose the edits.
      await writeFile(options.out, text, { flag: options.force ? 'w' : 'wx' });
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      io.stderr(code === 'EEXIST' ? `${options.out} exists; --force replaces it (and any edits made to it)\n` : `cannot write ${options.out}: ${code ?? (error as Error).message}\n`);
      return EXIT_CODES.failed;
    }
  }
  io.stderr(`${summary.join('\n')}\n${options.out === undefined ? '' : `check it with: oncegate contracts check ${options.out}\n`}`);
  return EXIT_CODES.ok;
}

/** `oncegate contracts import openapi`: needs no configuration, data folder or gateway. */
export function importCommand(): Command {
  const openapi = new Command('openapi')
    .summary('Write tool contracts from an OpenAPI 3.0 or 3.1 document, one tool per operation.')
    .description(
      'Reads an OpenAPI 3.0 or 3.1 document (JSON or YAML; a file, or an http(s) URL), validates it, and writes one tool contract per ' +
        'operation: its parameters and JSON body as arguments, its class from the method (an Idempotency-Key header makes a POST an ' +
        'idempotent write carrying the execution id), its security as a credential reference. What cannot be mapped is listed on ' +
        'standard error and as comments at each tool. The file is meant to be edited; it passes oncegate contracts check as written. ' +
        'See docs/contracts.md, "Importing from OpenAPI".\n\n' +
        'Exit codes: 0 written, 1 the document is unreadable or invalid, or nothing could be imported, 2 usage error (an unknown tag ' +
        'or operationId, no server URL to send to).',
    )
    .argument('<document>', 'the OpenAPI document: a file path or an http(s) URL')
    .option('--tag <tag>', 'only the operations with this tag; repeat for more', repeated)
    .option('--operation <operationId>', 'only this operation; repeat for more (with --tag: those as well)', repeated)
    .option('--out <file>', 'write the contract file here (default: standard output); an existing file is kept unless --force')
    .option('--force', 'replace the --out file if it exists')
    .option('--server <url>', "the API's base URL, instead of the document's first server")
    .option('--credential <ref>', 'the credential reference for every mapped security scheme (default: one named after each scheme)')
    .action(action((io, location, options) => importOpenApiCommand(io, location, options)));
  return new Command('import').description('Write tool contracts from another description of an API: openapi.').addCommand(openapi);
}
