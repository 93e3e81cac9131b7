// A command's plumbing, apart from the services it may start: the program's run and its exit codes, the output and
// files a command may touch, and the end of a process. On commander alone, so a command line is parsed and a command
// chosen before any service's code is loaded.
export { action, EXIT_CODES, exitWhenDone, PROCESS_IO, runProgram, UsageError, type CliIo, type ExitCode } from './cli-command';
