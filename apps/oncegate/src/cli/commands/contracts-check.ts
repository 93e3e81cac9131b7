import { readFileSync } from 'node:fs';
import { OPERATION_CLASSES } from '@oncegate/domain';
import { checkContractFile, formatIssue, type ContractFile, type PluginSectionCheck } from '@oncegate/contracts';
import { Command } from '@commander-js/extra-typings';
import { channelOptionsReader } from '@oncegate/dispatcher-kit/host';
import { GatewayConfigError, parseGatewayConfig, type GatewayConfig } from '@oncegate/host-config';
import { action, EXIT_CODES, type CliIo, type ExitCode } from '@oncegate/host-cli';
import { mcpKit } from '@oncegate/service-dispatcher-mcp';
import { loadChannelKits, sectionCheckOfKit, type ChannelModuleKit } from './channel-modules';
import { importCommand } from './contracts-import';

/**
 * `examples/tools.yaml: 9 tools OK (read_only 2, idempotent_write 2, ...), 3 from examples/upstream-desk.yaml`: classes in
 * the domain's order, then how many tools came from each file included.
 */
export function summarise(contract: ContractFile): string {
  const counts = OPERATION_CLASSES.map((operationClass) => [operationClass, contract.tools.filter((tool) => tool.operationClass === operationClass).length] as const)
    .filter(([, count]) => count > 0)
    .map(([operationClass, count]) => `${operationClass} ${count}`);
  const tools = contract.tools.length === 1 ? '1 tool' : `${contract.tools.length} tools`;
  const fromIncluded = contract.included.map((file) => `${contract.tools.filter((tool) => tool.source.file === file).length} from ${file}`);
  const included = fromIncluded.length === 0 ? '' : `, ${fromIncluded.slice(0, -1).join(', ')}${fromIncluded.length > 1 ? ' and ' : ''}${fromIncluded.at(-1)}`;
  return `${contract.file}: ${tools} OK (${counts.join(', ')})${included}`;
}

/**
 * The section checks of the plugin channels this CLI knows: the built-in `mcp` channel's (as `oncegate start` hosting
 * it checks its tools), then those named by `--channel`, by channel name.
 */
function pluginChannels(kits: readonly ChannelModuleKit[]): Map<string, PluginSectionCheck> {
  return new Map([mcpKit, ...kits].map((kit) => [kit.definition.name, sectionCheckOfKit(kit)]));
}

/**
 * `--config`: the configuration file checked as a process would read it, then the `channels.<name>` entry of each
 * channel given with `--channel` against the options schema it publishes, as the process hosting it would at start.
 * An entry of a channel not given is said to be unchecked, not passed over.
 */
async function checkConfiguration(file: string, kits: readonly ChannelModuleKit[], io: CliIo): Promise<number> {
  let text: string;
  try {
    text = await io.readFile(file);
  } catch (error) {
    io.stdout(`${file}: cannot read file: ${error instanceof Error ? error.message : String(error)}\n`);
    return 1;
  }
  let config: GatewayConfig;
  try {
    // The environment may supply what the file leaves out (ONCEGATE_STORE_URL, ONCEGATE_KAFKA_BROKERS).
    config = parseGatewayConfig(text, file, undefined, process.env);
  } catch (error) {
    if (!(error instanceof GatewayConfigError)) throw error;
    for (const issue of error.issues) io.stdout(`${formatIssue(issue)}\n`);
    return error.issues.length;
  }
  const issues = kits.flatMap((kit) => {
    const checked = channelOptionsReader(kit.definition).check(config);
    return checked.ok ? [] : checked.issues;
  });
  for (const issue of issues) io.stdout(`${formatIssue(issue)}\n`);
  if (issues.length === 0) {
    const checked = kits.map((kit) => kit.definition.name);
    const unchecked = Object.keys(config.channels).filter((name) => !checked.includes(name));
    const note = unchecked.length === 0 ? '' : `; ${unchecked.map((name) => `channels.${name}`).join(', ')} not checked (--channel <its module>)`;
    io.stdout(`${file}: configuration OK${checked.length === 0 ? '' : ` (options of channel ${checked.join(', ')} checked)`}${note}\n`);
  }
  return issues.length;
}

async function check(files: readonly string[], modules: readonly string[], configFile: string | undefined, io: CliIo): Promise<ExitCode> {
  const kits = await loadChannelKits(modules, (module) => `--channel ${module}`);
  if (typeof kits === 'string') {
    io.stderr(`${kits}\n`);
    return EXIT_CODES.usage;
  }
  const channels = pluginChannels(kits);
  let problems = 0;
  let failedFiles = 0;
  if (configFile !== undefined) {
    const found = await checkConfiguration(configFile, kits, io);
    problems += found;
    if (found > 0) failedFiles += 1;
  }
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
    const result = checkContractFile(text, file, { pluginChannels: channels, readIncluded: (included) => readFileSync(included, 'utf8') });
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
      'Validates tool contract files (YAML, version 1; see docs/contracts.md), each with the files it includes. Prints one ' +
        "summary line per valid file, and every problem as 'file:line:column path: reason'. With --config, a configuration file is checked first, and with it the " +
        'channels.<name> entries of the --channel channels.' +
        '\n\nExit codes: 0 all files valid, 1 a file is invalid or unreadable, 2 usage error.',
    )
    .argument('<file...>', 'contract files to check')
    .option(
      '--channel <module...>',
      "a plugin channel's module (its package name, or the path of a JavaScript file exporting its kit): the plugin: sections of its tools are checked by the channel, as its service would at start",
      [] as string[],
    )
    .option(
      '--config <file>',
      "a configuration file (oncegate.yaml): checked as a process reads it, with the channels.<name> entry of each --channel against that channel's options schema",
    )
    .action(action((io, files, options) => check(files, options.channel, options.config, io)));
  return new Command('contracts').description('Tool contract files (docs/contracts.md): check, import.').addCommand(checkCommand).addCommand(importCommand());
}
