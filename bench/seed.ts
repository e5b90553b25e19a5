/**
 * The organizations the benchmark searches: one INSERT … SELECT over generate_series, the same SQL on PostgreSQL and
 * on PGlite. Names are built from word lists so that a search for one word matches a known share of them (a
 * `SEARCH_TERM` prefix appears in 1 of `PREFIXES.length` names), never all and never none.
 */

const PREFIXES = [
  'Acme',
  'Apex',
  'Blue',
  'Bright',
  'Cedar',
  'Clear',
  'Copper',
  'Crimson',
  'Delta',
  'Eagle',
  'Emerald',
  'Evergreen',
  'Falcon',
  'Granite',
  'Harbor',
  'Horizon',
  'Iron',
  'Juniper',
  'Lunar',
  'Maple',
  'Meridian',
  'Nimbus',
  'Northwind',
  'Oakridge',
  'Orbit',
  'Pacific',
  'Pinnacle',
  'Quantum',
  'Riverside',
  'Summit',
  'Silverline',
  'Stellar',
  'Tidal',
  'Vertex',
  'Willow',
  'Zenith',
] as const;

const SECTORS = [
  'Analytics',
  'Bakery',
  'Capital',
  'Clinic',
  'Consulting',
  'Dynamics',
  'Energy',
  'Foods',
  'Freight',
  'Games',
  'Health',
  'Insurance',
  'Labs',
  'Logistics',
  'Media',
  'Motors',
  'Networks',
  'Partners',
  'Pharma',
  'Robotics',
  'Software',
  'Studios',
  'Systems',
  'Ventures',
] as const;

const SUFFIXES = ['Inc', 'LLC', 'GmbH', 'Ltd', 'SA', 'Group', 'Co', 'BV'] as const;

/** Lower case, as a user would type it; matches `Harbor …` names (and their `harbor-…` slugs) only. */
export const SEARCH_TERM = 'harbor';

/** How many of `count` seeded organizations the search term matches (the prefix cycles with the row number). */
export const expectedMatches = (count: number): number => {
  const index = PREFIXES.findIndex((p) => p.toLowerCase().includes(SEARCH_TERM));
  return Math.floor((count - 1 - index) / PREFIXES.length) + 1;
};

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const sqlArray = (words: readonly string[]) => `array[${words.map((w) => `'${w}'`).join(', ')}]`;

/**
 * `count` organizations of one application, created one minute apart (the newest now), e.g. `Harbor Logistics GmbH`
 * with slug `harbor-logistics-gmbh-1234` (the row number keeps slugs unique, as the service's own suffix would).
 * The application id is inlined (checked to be a UUID) so that both drivers run the text as it is.
 */
export function seedOrganizationsSql(applicationId: string, count: number): string {
  if (!UUID.test(applicationId)) throw new Error(`not a UUID: ${applicationId}`);
  if (!Number.isInteger(count) || count < 1 || count > 10_000_000) throw new Error(`bad organization count: ${count}`);
  const p = PREFIXES.length;
  const ps = p * SECTORS.length;
  return `
insert into organizations (id, application_id, name, slug, created_at, updated_at)
select gen_random_uuid(), '${applicationId}'::uuid, s.name,
       lower(replace(s.name, ' ', '-')) || '-' || s.i, s.at, s.at
  from (
    select i,
           (${sqlArray(PREFIXES)})[1 + i % ${p}] || ' ' ||
           (${sqlArray(SECTORS)})[1 + (i / ${p}) % ${SECTORS.length}] || ' ' ||
           (${sqlArray(SUFFIXES)})[1 + (i / ${ps}) % ${SUFFIXES.length}] as name,
           now() - (${count - 1} - i) * interval '1 minute' as at
      from generate_series(0, ${count - 1}) as i
  ) s`;
}

/** Fresh planner statistics, as autovacuum would have them after a bulk load. */
export const ANALYZE_SQL = 'analyze organizations';
