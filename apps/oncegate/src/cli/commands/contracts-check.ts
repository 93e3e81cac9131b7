import { OPERATION_CLASSES } from '@oncegate/domain';
import { checkContractFile, formatIssue, type ContractFile } from '@oncegate/contracts';
import { Command } from '@commander-js/extra-typings';
import { action, EXIT_CODES, type CliIo, type ExitCode } from '@oncegate/service-host';

/** `examples/tools.yaml: 6 tools OK (read_only 1, idempotent_write 1, ...)`, classes in the domain's order. */
export function summarise(contract: ContractFile): string {
  const counts = OPERATION_CLASSES.map((operationClass) => [operationClass, contract.tools.filter((tool) => tool.operationClass === operationClass).length] as const)
    .filter(([, count]) => count > 0)
    .map(([operationClass, count]) => `${operationClass} ${count}`);
  const tools = contract.tools.length === 1 ? '1 tool' : `${contract.tools.length} tools`;
  return `${contract.file}: ${tools} OK (${counts.join(', ')})`;
}

async function check(files: readonly string[], io: CliIo): Promise<ExitCode> {
  let problems = 0;
  let failedFiles = 0;
  for (const file of files) {
    let text: string;
    try {
      text = await io.readFile(file);
    } catch (error) {
      io.stdout(`${file}: cannot read file: ${error instanceof Error ? error.message : String(error)}\n`);
      problems += 1;
      failedFiles += 1;
      continue;
    }
    const result = checkContractFile(text, file);
    if (result.ok) {
      io.stdout(`${summarise(result.contract)}\n`);
      continue;
    }
    for (const issue of result.issues) io.stdout(`${formatIssue(issue)}\n`);
    problems += result.issues.length;
    failedFiles += 1;
  }
  if (failedFiles === 0) return EXIT_CODES.ok;
  io.stderr(`${problems} problem${problems === 1 ? '' : 's'} in ${failedFiles} file${failedFiles === 1 ? '' : 's'}\n`);
  return EXIT_CODES.failed;
}

/** `oncegate contracts check`: needs no configuration, data folder or gateway. */
export function contractsCommand(): Command {
  const checkCommand = new Command('check')
    .summary('Validate tool contract files and summarise each one.')
    .description(
      'Validates tool contract files (YAML, version 1; see docs/contracts.md). Prints one summary line per valid file, and every ' +
        "problem as 'file:line:column path: reason'.\n\nExit codes: 0 all files valid, 1 a file is invalid or unreadable, 2 usage error.",
    )
    .argument('<file...>', 'contract files to check')
    .action(action((io, files) => check(files, io)));
  return new Command('contracts').description('Tool contract files (docs/contracts.md): check.').addCommand(checkCommand);
}
