import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { useNavigate, useParams, useSearch } from '@tanstack/react-router';
import { type ReactNode, useId, useState } from 'react';
import { Label, Radio, RadioGroup, ToggleButton } from 'react-aria-components';
import { Bar, BarChart, CartesianGrid, Legend, Line, LineChart, ResponsiveContainer, Tooltip, XAxis, YAxis } from 'recharts';
import { app, type Outputs } from '../api.ts';
import { curl, EmptyState } from '../components/empty-state.tsx';
import { ErrorNotice } from '../components/error-notice.tsx';
import { ListTable } from '../components/list-table.tsx';
import { ScrollRegion } from '../components/scroll-region.tsx';
import { DASHBOARD_RANGES, type DashboardRange } from '../search.ts';

type Day = Outputs['stats']['daily']['days'][number];

const DAY_MS = 86_400_000;
const dayOf = (ms: number) => new Date(ms).toISOString().slice(0, 10);
/** The last `days` UTC days, today included. */
function rangeOf(days: number): { from: string; to: string } {
  const today = Date.parse(`${dayOf(Date.now())}T00:00:00Z`);
  return { from: dayOf(today - (days - 1) * DAY_MS), to: dayOf(today) };
}
/** `2026-11-27` as `27 Nov` (the axis), in UTC: the days are UTC days. */
const short = (day: string) =>
  new Date(`${day}T00:00:00Z`).toLocaleDateString(undefined, { day: 'numeric', month: 'short', timeZone: 'UTC' });
const number = (n: number) => n.toLocaleString();

/** The series colours: CSS variables, so they follow light and dark (styles.css). */
const METHODS = [
  { key: 'magic_link', name: 'Magic link', color: 'var(--chart-1)' },
  { key: 'passkey', name: 'Passkey', color: 'var(--chart-2)' },
  { key: 'federated', name: 'Social or SSO', color: 'var(--chart-3)' },
  { key: 'other', name: 'Other', color: 'var(--chart-4)' },
] as const;

/** The share of the day's finished webhook deliveries that succeeded, in percent; null on a day without any. */
function successRate(day: Day): number | null {
  const finished = day.webhook_deliveries.succeeded + day.webhook_deliveries.failed;
  return finished === 0 ? null : Math.round((day.webhook_deliveries.succeeded / finished) * 1000) / 10;
}

/**
 * The application's dashboard: headline figures, and charts of its last 7, 30 or 90 UTC days (`?days=`). Each chart
 * is a figure named by its caption, with its numbers in a table (visually hidden until "Show as table").
 */
export function DashboardPage() {
  const { appId } = useParams({ from: '/apps/$appId/dashboard' });
  const { days = 30 } = useSearch({ from: '/apps/$appId/dashboard' });
  const navigate = useNavigate({ from: '/apps/$appId/dashboard' });
  const trpc = app.useTRPC();
  const headline = useQuery(trpc.stats.get.queryOptions({ id: appId }));
  const range = rangeOf(days);
  const daily = useQuery({
    ...trpc.stats.daily.queryOptions({ id: appId, ...range }),
    placeholderData: keepPreviousData,
  });
  const rows = (daily.data?.days ?? []).map((day) => ({
    ...day,
    label: short(day.date),
    ...day.sign_ins,
    webhook_success: successRate(day),
  }));

  return (
    <section className="dashboard">
      <h1>Dashboard</h1>
      <ErrorNotice error={headline.error} title="The statistics could not be read" />
      {headline.isPending && <p role="status">Loading the statistics…</p>}
      {headline.data && (
        <dl className="stats">
          <div>
            <dt>Sign-ins, last 24 hours</dt>
            <dd>{number(headline.data.sign_ins_24h)}</dd>
          </div>
          <div>
            <dt>Active users</dt>
            <dd>{number(headline.data.active_users)}</dd>
          </div>
          <div>
            <dt>Active sessions</dt>
            <dd>{number(headline.data.active_sessions)}</dd>
          </div>
          {daily.data && (
            <div>
              <dt>Monthly active users</dt>
              <dd>{number(daily.data.monthly_active_users.count)}</dd>
            </div>
          )}
        </dl>
      )}
      {headline.data && !headline.data.has_traffic && (
        <EmptyState
          title="No sign-in yet"
          cli="npx gatehouse stats daily --from 2026-11-01"
          curl={curl('/v1/applications/$APP/stats/daily?from=2026-11-01')}
        >
          <p>The charts fill in as people sign in. The same numbers, per day:</p>
        </EmptyState>
      )}
      <RadioGroup
        className="field range"
        orientation="horizontal"
        value={String(days)}
        onChange={(value) =>
          void navigate({ search: { days: Number(value) === 30 ? undefined : (Number(value) as DashboardRange) } })
        }
      >
        <Label>Period</Label>
        <div className="radios segmented">
          {DASHBOARD_RANGES.map((n) => (
            <Radio key={n} value={String(n)}>
              Last {n} days
            </Radio>
          ))}
        </div>
      </RadioGroup>
      <ErrorNotice error={daily.error} title="The daily statistics could not be read" />
      {daily.isPending && <p role="status">Loading the daily statistics…</p>}
      {daily.data && (
        <div className="charts" aria-busy={daily.isFetching}>
          <ChartFigure
            title="Sign-ins per day, by method"
            summary={`${number(rows.reduce((s, r) => s + r.total, 0))} sign-ins from ${daily.data.from} to ${daily.data.to} (UTC days).`}
            columns={['Day', ...METHODS.map((m) => m.name), 'Total']}
            rows={rows.map((r) => [r.date, ...METHODS.map((m) => number(r[m.key])), number(r.total)])}
          >
            {(title) => (
              <BarChart data={rows} title={title}>
                <CartesianGrid strokeDasharray="3 3" stroke="var(--border)" vertical={false} />
                <XAxis dataKey="label" tick={{ fill: 'var(--muted)' }} minTickGap={12} />
                <YAxis allowDecimals={false} tick={{ fill: 'var(--muted)' }} width={40} />
                <Tooltip contentStyle={TOOLTIP} cursor={{ fill: 'var(--surface)' }} />
                <Legend />
                {METHODS.map((m) => (
                  <Bar key={m.key} dataKey={m.key} name={m.name} stackId="sign-ins" fill={m.color} isAnimationActive={false} />
                ))}
              </BarChart>
            )}
          </ChartFigure>
          <ChartFigure
            title="Daily active users"
            summary={`Monthly active users (${daily.data.monthly_active_users.from} to ${daily.data.monthly_active_users.to}): ${number(daily.data.monthly_active_users.count)}.`}
            columns={['Day', 'Active users']}
            rows={rows.map((r) => [r.date, number(r.active_users)])}
          >
            {(title) => (
              <LineChart data={rows} title={title}>
                <CartesianGrid strokeDasharray="3 3" stroke="var(--border)" vertical={false} />
                <XAxis dataKey="label" tick={{ fill: 'var(--muted)' }} minTickGap={12} />
                <YAxis allowDecimals={false} tick={{ fill: 'var(--muted)' }} width={40} />
                <Tooltip contentStyle={TOOLTIP} />
                <Line
                  dataKey="active_users"
                  name="Active users"
                  stroke="var(--chart-1)"
                  strokeWidth={2}
                  dot={false}
                  isAnimationActive={false}
                />
              </LineChart>
            )}
          </ChartFigure>
          <DailyCount
            rows={rows}
            title="New users per day"
            name="New users"
            total="new users"
            dataKey="new_users"
            fill="var(--chart-2)"
          />
          <DailyCount
            rows={rows}
            title="Failed sign-ins per day"
            name="Failed sign-ins"
            total="refused sign-ins"
            dataKey="failed_sign_ins"
            fill="var(--danger)"
          />
          <ChartFigure
            title="Webhook success rate"
            summary={
              rows.some((r) => r.webhook_success !== null)
                ? 'The share of each day’s finished webhook deliveries that succeeded (deliveries still being tried are left out).'
                : 'No webhook delivery finished in the period.'
            }
            columns={['Day', 'Succeeded', 'Failed', 'Pending', 'Success rate']}
            rows={rows.map((r) => [
              r.date,
              number(r.webhook_deliveries.succeeded),
              number(r.webhook_deliveries.failed),
              number(r.webhook_deliveries.pending),
              r.webhook_success === null ? '—' : `${r.webhook_success} %`,
            ])}
          >
            {(title) => (
              <LineChart data={rows} title={title}>
                <CartesianGrid strokeDasharray="3 3" stroke="var(--border)" vertical={false} />
                <XAxis dataKey="label" tick={{ fill: 'var(--muted)' }} minTickGap={12} />
                <YAxis domain={[0, 100]} ticks={[0, 25, 50, 75, 100]} unit=" %" tick={{ fill: 'var(--muted)' }} width={56} />
                <Tooltip contentStyle={TOOLTIP} />
                <Line
                  dataKey="webhook_success"
                  name="Success rate (%)"
                  stroke="var(--chart-3)"
                  strokeWidth={2}
                  connectNulls
                  isAnimationActive={false}
                />
              </LineChart>
            )}
          </ChartFigure>
        </div>
      )}
    </section>
  );
}

const TOOLTIP = { background: 'var(--bg)', border: '1px solid var(--border)', color: 'var(--text)' };

/** A count per day as bars (new users, failed sign-ins), with its total over the period in the summary. */
function DailyCount({
  rows,
  title,
  name,
  total,
  dataKey,
  fill,
}: {
  rows: Array<Day & { label: string }>;
  title: string;
  /** The column and the series: "New users". */
  name: string;
  /** What the total counts: "new users". */
  total: string;
  dataKey: 'new_users' | 'failed_sign_ins';
  fill: string;
}) {
  return (
    <ChartFigure
      title={title}
      summary={`${number(rows.reduce((s, r) => s + r[dataKey], 0))} ${total} in the period.`}
      columns={['Day', name]}
      rows={rows.map((r) => [r.date, number(r[dataKey])])}
    >
      {(caption) => (
        <BarChart data={rows} title={caption}>
          <CartesianGrid strokeDasharray="3 3" stroke="var(--border)" vertical={false} />
          <XAxis dataKey="label" tick={{ fill: 'var(--muted)' }} minTickGap={12} />
          <YAxis allowDecimals={false} tick={{ fill: 'var(--muted)' }} width={40} />
          <Tooltip contentStyle={TOOLTIP} cursor={{ fill: 'var(--surface)' }} />
          <Bar dataKey={dataKey} name={name} fill={fill} isAnimationActive={false} />
        </BarChart>
      )}
    </ChartFigure>
  );
}

/**
 * A chart as a figure named by its caption, and the same numbers as a table: visually hidden (screen readers read it)
 * until "Show as table" shows it in place of the chart.
 */
function ChartFigure({
  title,
  summary,
  columns,
  rows,
  children,
}: {
  title: string;
  summary: string;
  columns: string[];
  rows: string[][];
  children: (title: string) => ReactNode;
}) {
  const id = useId();
  const [asTable, setAsTable] = useState(false);
  const table = (
    <ListTable caption={title} columns={columns} rows={rows} rowKey={(row) => row[0] ?? ''}>
      {(row) =>
        row.map((cell, i) =>
          i === 0 ? (
            <th key={columns[i]} scope="row">
              {cell}
            </th>
          ) : (
            <td key={columns[i]}>{cell}</td>
          ),
        )
      }
    </ListTable>
  );
  return (
    <figure className="chart" aria-labelledby={`${id}-caption`}>
      <div className="chart-head">
        <figcaption id={`${id}-caption`}>
          <h2>{title}</h2>
          <p className="meta">{summary}</p>
        </figcaption>
        <ToggleButton className="button small" isSelected={asTable} onChange={setAsTable}>
          Show as table
        </ToggleButton>
      </div>
      {!asTable && (
        <div className="chart-plot">
          <ResponsiveContainer width="100%" height={240}>
            {children(title)}
          </ResponsiveContainer>
        </div>
      )}
      {asTable ? (
        <ScrollRegion label={`${title}, as a table`} className="chart-table">
          {table}
        </ScrollRegion>
      ) : (
        <div className="visually-hidden">{table}</div>
      )}
    </figure>
  );
}
