// Loaded into a gateway process with `node --import`: each SIGUSR2 moves the wall clock (Date) forward by
// ONCEGATE_TEST_CLOCK_JUMP_MS, so a test can retry "minutes later" without waiting. Timers are not affected.
const RealDate = globalThis.Date;
const step = Number(process.env.ONCEGATE_TEST_CLOCK_JUMP_MS ?? 60_000);
let offset = 0;
process.on('SIGUSR2', () => {
  offset += step;
  process.stdout.write(`clock jumped to +${offset} ms\n`);
});

class JumpedDate extends RealDate {
  constructor(...args) {
    if (args.length === 0) super(RealDate.now() + offset);
    else super(...args);
  }

  static now() {
    return RealDate.now() + offset;
  }
}
globalThis.Date = JumpedDate;
