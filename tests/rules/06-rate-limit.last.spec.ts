/** Rule 6 from the other team's side, after every other test of the run (the project last of all): spending the foreign team's limit there delays nothing. */
import { notVerifiable } from '../../src/checks/checks';
import { spec } from '../../src/config/rules';
import { judge } from '../../src/domain/named-checks';
import { teamsApart } from '../../src/domain/rate-limit';
import { test } from '../../src/playwright/fixtures';

test(
  "while the foreign team is refused for its rate, the owner team, whose plan has room, is still served: a 429 means the caller's plan's limit",
  spec('rate-limit/teams-apart'),
  async ({ api, identities, settings, coordination, check }) => {
    const apart = await teamsApart({ api, identities, settings, coordination });
    if (!apart.during) return notVerifiable(apart.untold);
    await check('teams-isolated', judge.teamsIsolated(identities.foreign.name, apart.during));
  },
);
