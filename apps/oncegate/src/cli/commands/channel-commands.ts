import { Command } from '@commander-js/extra-typings';
import { publishedSchemas } from '@oncegate/dispatcher-kit/host';
import { action, EXIT_CODES, type CliIo, type ExitCode } from '@oncegate/host-cli';
import { loadChannelKits } from './channel-modules';

/**
 * One line of JSON per channel the modules export (JSON Lines, so a module with several kits needs no wrapper and
 * `jq` reads the output as it is): its name and the JSON Schemas of its `plugin:` section and of its options.
 */
async function printSchemas(modules: readonly string[], io: CliIo): Promise<ExitCode> {
  const kits = await loadChannelKits(modules, (module) => module);
  if (typeof kits === 'string') {
    io.stderr(`${kits}\n`);
    return EXIT_CODES.usage;
  }
  for (const kit of kits) io.stdout(`${JSON.stringify(publishedSchemas(kit.definition))}\n`);
  return EXIT_CODES.ok;
}

/** `oncegate channels`: what a plugin channel's module publishes; needs no configuration, data folder or gateway. */
export function channelsCommand(): Command {
  const schemaCommand = new Command('schema')
    .summary("Print the JSON Schemas a plugin channel publishes: its tools' plugin: section and its options.")
    .description(
      'Prints, for each channel the modules export, one line of JSON: {"channel": <name>, "section": <JSON Schema of its tools\' ' +
        'plugin: section>, "options": <JSON Schema of its channels.<name> entry in oncegate.yaml>}, null for what the channel ' +
        'declares none of (a section checked by code alone has no schema). See docs/dispatchers.md.\n\nExit codes: 0 printed, 2 a module ' +
        'cannot be loaded or exports no channel.',
    )
    .argument('<module...>', "a plugin channel's module: its package name, or the path of a JavaScript file exporting its kit")
    .action(action((io, modules) => printSchemas(modules, io)));
  return new Command('channels').description('Plugin channels (docs/dispatchers.md): the schemas they publish.').addCommand(schemaCommand);
}
