/** Renders docs/bench.json as docs/performance.md, the page the README links to for figures. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Bench = Record<string, any>;

const row = (cells: unknown[]) => `| ${cells.map((cell) => (cell === undefined ? '–' : String(cell))).join(' | ')} |`;

export function renderPerformance(bench: Bench): string {
  const { suite, burst, timing, throughput, sequences } = bench;
  const lines = [
    '# Performance',
    '',
    `Written by \`npm run bench\` from \`docs/bench.json\` (${bench.date}, ${bench.cores} cores, Node ${bench.node}). Every`,
    'figure is a ratio against a baseline measured in the same script, since the machines are shared and noisy.',
    '',
    '| Figure | Measured | Baseline | Ratio | Goal |',
    '| - | - | - | - | - |',
  ];
  if (bench.command) {
    const { command } = bench;
    lines.push(
      row([
        '`npm run conformance` end to end, reports included (median of 5)',
        `${command.seconds} s (${Object.entries(command.phases)
          .map(([phase, seconds]) => `${phase} ${seconds} s`)
          .join(', ')})`,
        `one empty Playwright test (${command.emptyTestSeconds} s) + longest hold: ${command.floorSeconds} s`,
        command.ratio,
        command.goal,
      ]),
    );
  }
  if (suite) {
    lines.push(
      row([
        'Suite wall time, embedded reference (median of 5)',
        `${suite.suiteSeconds} s`,
        `one empty Playwright test (${suite.emptyTestSeconds} s) + longest hold (${suite.longestHoldSeconds} s)`,
        suite.ratio,
        suite.goal,
      ]),
    );
    lines.push(
      row([
        'What the sequences rule adds to it',
        `${suite.sequencesAddSeconds} s`,
        `the suite without it: ${suite.withoutSequencesSeconds} s`,
        '–',
        suite.sequencesGoal,
      ]),
    );
  }
  if (burst)
    lines.push(
      row([
        `Burst of ${burst.requests} concurrent stops`,
        `${burst.suiteMs} ms`,
        `autocannon, same endpoint and concurrency: ${burst.autocannonMs} ms`,
        burst.ratio,
        burst.goal,
      ]),
    );
  if (timing) {
    lines.push(
      row([
        `Billing interval width, ${timing.intervals} intervals from 5 ordinary runs`,
        `median ${timing.medianIntervalWidthMs} ms (${timing.intervalWidthsMs[0]}–${timing.intervalWidthsMs.at(-1)})`,
        '–',
        '–',
        timing.widthGoal,
      ]),
    );
    lines.push(
      row([
        'Smallest `sessionDurationMs` bias caught',
        `${timing.smallestDetectedBiasMs} ms (both signs)`,
        'biases of 5–100 ms injected into the reference',
        '–',
        timing.biasGoal,
      ]),
    );
  }
  for (const [label, figure] of Object.entries(throughput ?? {}) as [string, Bench][]) {
    lines.push(
      row([
        `Reference throughput, DELETE ${label}`,
        `${figure.referenceRps} req/s`,
        `bare \`node:http\` answering the same JSON: ${figure.bareRps} req/s`,
        `${figure.ratio} (median of ${figure.rounds ?? figure.ratios.length} rounds)`,
        figure.goal,
      ]),
    );
  }
  if (sequences) {
    lines.push('', `## Order-only faults caught by the sequences rule, over ${sequences.seeds} seeds`, '', `${sequences.target ?? 'default runs'}.`, '');
    lines.push('| Variant | Caught | Median run (s) | Required by the matrix |', '| - | - | - | - |');
    for (const [name, count] of Object.entries(sequences.caught))
      lines.push(
        row([name, `${count} of ${sequences.seeds}`, String(sequences.medianSeconds?.[name] ?? '–'), sequences.required.includes(name) ? 'yes' : 'no']),
      );
    const shortest = Object.entries(sequences.shortestCounterexample ?? {}) as [string, string][];
    if (shortest.length) {
      lines.push('', 'The shortest counterexample each fault was reported with:');
      for (const [name, history] of shortest) lines.push('', `${name}:`, '', '```', history, '```');
    }
  }
  if (bench.caps) {
    lines.push('', "## Against targets that cap each team's live sessions (`npm run bench caps`)", '', `${bench.caps.target}.`, '');
    lines.push('| Cap | Verdict | Median wall (s) | Ratio to no cap | Cap the runs learnt |', '| - | - | - | - | - |');
    const byCap = (Object.entries(bench.caps.byCap) as [string, Bench][]).sort(([a], [b]) => (a === 'none' ? -1 : b === 'none' ? 1 : Number(a) - Number(b)));
    for (const [cap, figure] of byCap) lines.push(row([cap, figure.verdicts.join(', '), figure.medianSeconds, figure.ratio, figure.learnt.join(', ')]));
  }
  if (bench.selftest) {
    const { selftest } = bench;
    lines.push('', "## Where `npm test`'s CPU time goes (`npm run bench selftest`)", '');
    lines.push(
      `Every Node process of one \`npm test\` accounted at its exit: ${selftest.cpuSeconds} CPU-s in ${selftest.processes} processes, ${selftest.wallSeconds} s of wall time (exit ${selftest.exitCode}); ` +
        `${selftest.ratio} times one \`npm run conformance --no-allure\` measured the same way (${selftest.baselineCpuSeconds} CPU-s). Goal: ${selftest.goal}.`,
      '',
    );
    for (const [title, groups] of [
      ['Kind of process', selftest.byKind],
      ['Self-test file', selftest.byFile],
    ] as [string, Bench][]) {
      lines.push(`| ${title} | CPU-s | Share | Processes |`, '| - | - | - | - |');
      for (const [name, group] of Object.entries(groups) as [string, Bench][])
        lines.push(row([name, group.cpuSeconds, `${Math.round((100 * group.cpuSeconds) / selftest.cpuSeconds)}%`, group.processes]));
      lines.push('');
    }
    lines.pop();
  }
  if (bench.faultClasses) {
    const { faultClasses } = bench;
    lines.push('', '## Fault classes as remote targets, the command with its defaults (`bench/fault-classes.ts`)', '');
    lines.push(
      `${faultClasses.date}, ${faultClasses.parallel} runs at a time; \`baseline\` is the kit before identities per request, the minute hold, the leak sweep and the third refusal (${faultClasses.baseline ?? 'none'}), run in the same script.`,
      '',
    );
    lines.push('| Variant | Kit | Runs | Exit codes | Caught by | Median wall (s) |', '| - | - | - | - | - | - |');
    for (const [variant, figures] of Object.entries(faultClasses.variants) as [string, Bench[]][]) {
      for (const figure of figures)
        lines.push(row([variant, figure.kit, figure.runs, figure.exitCodes.join(' '), figure.caughtBy.join(', ') || '–', figure.medianSeconds]));
    }
  }
  const strictRuns = Object.entries(bench).filter(([name]) => name.startsWith('strictLimit')) as [string, Bench][];
  if (strictRuns.length) {
    lines.push('', '## Against a target of 10 stop/interact requests per minute per team (`npm run bench:strict-limit`)', '');
    lines.push("No Retry-After, like the hosted service's free plan. Server-side counts; the run's own cost line after each.", '');
    for (const [name, figures] of strictRuns) {
      const keys = [
        name.includes('BurstTeam') ? 'a third key, BURST_API_KEY (`--burst-team`)' : "two teams' keys",
        name.includes('Production') ? 'whole-credit billing and any scheme word, with the production deviations file (`--production`)' : '',
        name.includes('FreePlan')
          ? 'the hosted service today on its free plan: its 429 words, 10 scrapes a minute apart, a cap of 2 jobs shared with scrapes, its provisioning race, with the production deviations file (`--free-plan`)'
          : '',
        /Plan(\d+)/.exec(name)
          ? `the hosted service today on a paid plan: ${/Plan(\d+)/.exec(name)![1]} stops and interacts and as many scrapes a minute, a cap of 5 jobs, with the production deviations file (\`--free-plan --limit ${/Plan(\d+)/.exec(name)![1]} --job-cap 5\`)`
          : '',
        /Cap(\d+)/.exec(name) ? `a cap of ${/Cap(\d+)/.exec(name)![1]} live sessions per team (\`--cap\`)` : '',
      ]
        .filter(Boolean)
        .join('; ');
      lines.push(
        `- ${keys}: ${figures.verdict ? `verdict ${figures.verdict}, ` : ''}exit ${figures.exitCode} in ${figures.minutes} minutes, ${figures.rateLimitedRequests} requests to stop and interact ` +
          `(${figures.throttled} of them answered 429), ${figures.scrapes} scrapes, ${figures.sessionsLeftRunning} sessions left running.`,
      );
      if (figures.cost?.floor)
        lines.push(
          `  Floor: the ${figures.cost.floor.team} team's ${figures.cost.floor.requests} requests at ${figures.cost.floor.perMinute} a minute, ${(figures.cost.floor.floorMs / 60_000).toFixed(1)} minutes; ratio ${figures.cost.floor.ratio} (goal <= 1.25).`,
        );
    }
  }
  return `${lines.join('\n')}\n`;
}
