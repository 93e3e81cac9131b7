import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { OPERATION_CLASSES } from '@oncegate/domain';
import { checkContractFile, formatIssue, type ContractFile, type PluginSectionCheck } from '@oncegate/contracts';
import { Command } from '@commander-js/extra-typings';
import { action, EXIT_CODES, type CliIo, type ExitCode } from '@oncegate/service-host';
import { importCommand } from './contracts-import';

/** `examples/tools.yaml: 6 tools OK (read_only 1, idempotent_write 1, ...)`, classes in the domain's order. */
export function summarise(contract: ContractFile): string {
  const counts = OPERATION_CLASSES.map((operationClass) => [operationClass, contract.tools.filter((tool) => tool.operationClass === operationClass).length] as const)
    .filter(([, count]) => count > 0)
    .map(([operationClass, count]) => `${operationClass} ${count}`);
  const tools = contract.tools.length === 1 ? '1 tool' : `${contract.tools.length} tools`;
  return `${contract.file}: ${tools} OK (${counts.join(', ')})`;
}

/** What `--channel` needs of a module: a channel kit (`defineChannel`'s result) among its exports. */
interface ChannelModuleKit {
  readonly definition: { readonly name: string; readonly contract?: { readonly check: PluginSectionCheck } };
}

function isKit(value: unknown): value is ChannelModuleKit {
  const definition = (value as { definition?: { name?: unknown; open?: unknown } } | null)?.definition;
  return typeof definition?.name === 'string' && typeof definition.open === 'function';
}

/**
 * The plugin channels named by `--channel`: each module's exported kits (a channel's package, or its compiled entry
 * point that exports the kit without starting it), by channel name.
 */
async function pluginChannels(modules: readonly string[]): Promise<Map<string, PluginSectionCheck> | string> {
  const checks = new Map<string, PluginSectionCheck>();
  for (const module of modules) {
    let exports: Record<string, unknown>;
    try {
      // A path is taken from the working directory; anything else (a package name) is resolved as Node would.
      const specifier = /^(\.|\/)/.test(module) ? pathToFileURL(resolve(module)).href : module;
      exports = (await import(specifier)) as Record<string, unknown>;
    } catch (error) {
      return `--channel ${module}: cannot load it: ${error instanceof Error ? error.message : String(error)}`;
    }
    const kits = Object.values(exports).filter(isKit);
    if (kits.length === 0) return `--channel ${module}: it exports no channel (a kit made by defineChannel of @oncegate/dispatcher-kit)`;
    for (const kit of kits) {
      // A channel without a section check takes any section; the file's check still requires one.
      checks.set(kit.definition.name, kit.definition.contract?.check ?? (() => undefined));
    }
  }
  return checks;
}

async function check(files: readonly string[], modules: readonly string[], io: CliIo): Promise<ExitCode> {
  const channels = await pluginChannels(modules);
  if (typeof channels === 'string') {
    io.stderr(`${channels}\n`);
    return EXIT_CODES.usage;
  }
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
    const result = checkContractFile(text, file, { pluginChannels: channels });
    if (result.ok) {
      // Said, not hidden: a section no channel here checked may still be refused when its service starts.
      const unchecked = [...new Set(result.contract.tools.map((tool) => tool.channel))].filter((channel) => channel !== 'http' && channel !== 'ssh' && !channels.has(channel));
      const note = unchecked.length === 0 ? '' : `; the plugin: sections of channel ${unchecked.join(', ')} were not checked (--channel <its module>)`;
      io.stdout(`${summarise(result.contract)}${note}\n`);
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

/** `oncegate contracts check` and `oncegate contracts import`: need no configuration, data folder or gateway. */
export function contractsCommand(): Command {
  const checkCommand = new Command('check')
    .summary('Validate tool contract files and summarise each one.')
    .description(
      'Validates tool contract files (YAML, version 1; see docs/contracts.md). Prints one summary line per valid file, and every ' +
        "problem as 'file:line:column path: reason'.\n\nExit codes: 0 all files valid, 1 a file is invalid or unreadable, 2 usage error.",
    )
    .argument('<file...>', 'contract files to check')
    .option(
      '--channel <module...>',
      "a plugin channel's module (its package name, or the path of a JavaScript file exporting its kit): the plugin: sections of its tools are checked by the channel, as its service would at start",
      [] as string[],
    )
    .action(action((io, files, options) => check(files, options.channel, io)));
  return new Command('contracts').description('Tool contract files (docs/contracts.md): check, import.').addCommand(checkCommand).addCommand(importCommand());
}
