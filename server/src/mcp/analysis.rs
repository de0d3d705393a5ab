//! Analysis tools: thin adapters from MCP arguments to `ingero-tools`
//! functions. No analysis happens here.

use super::chains_view::{ChainsView, Detail};
use super::readable;
use super::server::{failure, structured, IngeroMcp};
use ingero_store::{parse_duration_ns, TimeWindow};
use ingero_tools::chains::causal_chains;
use ingero_tools::compare::WindowChoice;
use ingero_tools::events::{query_events, EventPage, EventQuery};
use ingero_tools::explain::{explain, Report};
use ingero_tools::processes::{per_process, ProcessBreakdown};
use ingero_tools::ranks::{rank_report, RankReport};
use ingero_tools::render;
use ingero_tools::stacks::{hot_stacks, Category, SampleSet, StackQuery, StackReport};
use ingero_tools::stats::{op_stats, OpStatsReport};
use ingero_tools::teach::{self, Asked};
use ingero_tools::timeline::{gpu_track_text, timeline, Timeline};
use ingero_tools::{Scope, ToolError};
use rmcp::handler::server::tool::schema_for_output;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::CallToolResult;
use rmcp::service::RequestContext;
use rmcp::{tool, tool_router, ErrorData, RoleServer};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Arguments of `get_timeline_chart`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
pub struct ChartArgs {
    /// Window, process and database.
    #[serde(flatten)]
    pub scope: ScopeArgs,
    /// First second, from the capture start.
    pub start_offset_s: Option<f64>,
    /// Last second, from the capture start.
    pub end_offset_s: Option<f64>,
    /// Pixels (default 1200).
    pub width: Option<u32>,
    /// Pixels (default 640).
    pub height: Option<u32>,
}

/// What `get_timeline_chart` drew (the image itself is the SVG content block).
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ChartInfo {
    /// Image type of the content block.
    pub mime_type: String,
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
    /// Size of the SVG document in bytes.
    pub svg_bytes: usize,
}

/// Largest page `get_events` returns.
pub const MAX_EVENT_LIMIT: u32 = 1_000;
/// Page size when none is given.
pub const DEFAULT_EVENT_LIMIT: u32 = 100;

/// Window, process and database shared by the analysis tools.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
pub struct ScopeArgs {
    /// Keep only the last part of the capture: a duration counted back from its end ("30s", "5m", "PT1M", or seconds). Said once to models in the server's instructions.
    #[serde(default, deserialize_with = "duration_text")]
    #[schemars(schema_with = "duration_schema")]
    pub since: Option<String>,
    /// Drop the end of the capture: a duration counted back from its end, shorter than since.
    #[serde(default, deserialize_with = "duration_text")]
    #[schemars(schema_with = "duration_schema")]
    pub until: Option<String>,
    /// Only this process id.
    pub pid: Option<i32>,
    /// Only the process of this global rank (NCCL jobs); instead of pid.
    pub rank: Option<i32>,
    /// Database to read (a name from list_databases); the session's current database when absent.
    pub db: Option<String>,
}

/// Arguments of `get_causal_chains`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
pub struct ChainsArgs {
    /// Window, process and database.
    #[serde(flatten)]
    pub scope: ScopeArgs,
    /// "brief" (default) or "full" (every finding's evidence, rule checks, statistics).
    pub detail: Option<Detail>,
    /// A baseline database: also say how this run compares with it (as compare_runs).
    pub compare_with: Option<String>,
}

/// Arguments of `get_timeline`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
pub struct TimelineArgs {
    /// Window, process and database.
    #[serde(flatten)]
    pub scope: ScopeArgs,
    /// Bucket width, e.g. "1s".
    pub bucket: Option<String>,
}

/// Arguments of `get_stacks`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
pub struct StacksArgs {
    /// Window, process and database.
    #[serde(flatten)]
    pub scope: ScopeArgs,
    /// Only this thread.
    pub tid: Option<i32>,
    /// Only the thread with the most CUDA calls.
    pub gpu_thread: Option<bool>,
    /// "python" (default where recorded), "native", "on_cpu", "off_cpu" or "call_site".
    pub stacks: Option<String>,
    /// "on_cpu" (outside CUDA), "in_cuda", "blocked" or "preempted".
    pub category: Option<String>,
    /// Stacks listed (default 10).
    #[schemars(range(min = 1, max = 100))]
    pub limit: Option<u32>,
}

/// Arguments of `get_events`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
pub struct EventsArgs {
    /// Window, process and database.
    #[serde(flatten)]
    pub scope: ScopeArgs,
    /// CUDA op or host event kind, e.g. "cudaStreamSynchronize", "sched_switch".
    pub op: Option<String>,
    /// Page size (default 100).
    #[schemars(range(min = 1, max = 1000))]
    pub limit: Option<u32>,
    /// next_offset of the previous page.
    pub offset: Option<u64>,
    /// Only events at least this long, e.g. "1ms".
    pub min_dur: Option<String>,
}

/// A duration argument as text: a string as given, a number as seconds.
fn duration_text<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    /// Either JSON form.
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Raw {
        Text(String),
        Seconds(f64),
    }
    Ok(match Option::<Raw>::deserialize(d)? {
        None => None,
        Some(Raw::Text(s)) => Some(s),
        Some(Raw::Seconds(n)) => Some(n.to_string()),
    })
}

/// Input schema of a duration argument: text, a number of seconds, or null.
fn duration_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({ "type": ["string", "number", "null"] })
}

/// A scope checked against the file: what was asked, its parsed window.
#[derive(Debug, Clone)]
pub(crate) struct Checked {
    asked: Asked,
    window: TimeWindow,
}

impl Checked {
    /// The scope to analyse in `db`, or an error that teaches (see
    /// [`ingero_tools::teach`]).
    fn scope(&self, db: &ingero_store::TraceDb) -> Result<Scope, ToolError> {
        teach::check(db, &self.asked, self.window)
    }

    /// The same check, for a tool that explains CUDA activity.
    fn needing_cuda(mut self) -> Checked {
        self.asked.needs_cuda = true;
        self
    }

    /// The same check, with an op filter.
    fn with_op(mut self, op: Option<String>) -> Checked {
        self.asked.op = op;
        self
    }
}

impl ScopeArgs {
    /// The window strings parsed, with what was asked, to check against the
    /// file when the tool runs.
    fn to_scope(&self) -> Result<Checked, CallToolResult> {
        let window = TimeWindow::parse(self.since.as_deref(), self.until.as_deref())
            .map_err(|e| failure(e.to_string()))?;
        Ok(Checked {
            asked: Asked {
                since: self.since.clone(),
                until: self.until.clone(),
                pid: self.pid,
                rank: self.rank,
                op: None,
                needs_cuda: false,
            },
            window,
        })
    }

    /// Result-cache key of this scope, plus `extra` for the tool's own
    /// arguments.
    fn cache_key(&self, extra: &str) -> String {
        format!(
            "{:?}|{:?}|{:?}|{:?}|{extra}",
            self.since, self.until, self.pid, self.rank
        )
    }
}

macro_rules! bail_tool {
    ($e:expr) => {
        match $e {
            Ok(v) => v,
            Err(result) => return Ok(result),
        }
    };
}

impl IngeroMcp {
    /// Runs one analysis through the result cache: reused while the file is
    /// unchanged, computed on the pool otherwise.
    #[allow(clippy::too_many_arguments)]
    async fn analyse<T, F>(
        &self,
        tool: &'static str,
        key: String,
        db: Option<&str>,
        ctx: &RequestContext<RoleServer>,
        window: TimeWindow,
        job: F,
        shape: Shape<T>,
    ) -> Result<CallToolResult, ErrorData>
    where
        T: Send + 'static,
        F: FnOnce(&ingero_store::TraceDb) -> Result<T, ToolError> + Send + 'static,
    {
        let job = move |db: &ingero_store::TraceDb| {
            job(db).map(|value| (value, teach::window_line(db.span(), &window)))
        };
        let pool = bail_tool!(self.pick_db(db));
        let stamp = super::cache::Stamp::of(pool.path());
        if let Some(stamp) = stamp {
            if let Some(hit) = self.shared.cache.get(pool.path(), tool, &key, stamp) {
                return Ok(hit);
            }
        }
        let path = pool.path().to_path_buf();
        let out = self.run_on(pool, ctx, tool, job).await;
        let result = finish(out, tool, shape)?;
        if let Some(stamp) = stamp {
            self.shared.cache.put(&path, tool, key, stamp, &result);
        }
        Ok(result)
    }
}

/// How an analysis value becomes a tool result: its structured content and
/// its text content.
pub(crate) struct Shape<T> {
    json: fn(&T) -> Result<Value, serde_json::Error>,
    text: fn(&T) -> String,
}

impl<T: Serialize> Shape<T> {
    /// The value as it serialises, rendered as text by `text`.
    fn plain(text: fn(&T) -> String) -> Shape<T> {
        Shape {
            json: |v| serde_json::to_value(v),
            text,
        }
    }

    /// The value with readable companions beside raw numbers (see
    /// `readable`), rendered as text by `text`.
    fn readable(text: fn(&T) -> String) -> Shape<T> {
        Shape {
            json: |v| {
                let mut j = serde_json::to_value(v)?;
                readable::annotate(&mut j);
                Ok(j)
            },
            text,
        }
    }
}

/// Maps an analysis outcome to a tool result.
fn finish<T>(
    outcome: Result<Result<(T, String), ToolError>, CallToolResult>,
    what: &str,
    shape: Shape<T>,
) -> Result<CallToolResult, ErrorData> {
    match outcome {
        Err(tool_err) => Ok(tool_err),
        Ok(Err(e)) => {
            if !e.is_bad_input() {
                tracing::warn!(error = %e, "{what} failed");
            }
            Ok(failure(e.to_string()))
        }
        Ok(Ok((value, window))) => {
            let json = (shape.json)(&value).map_err(|e| {
                ErrorData::internal_error(format!("cannot serialise result: {e}"), None)
            })?;
            let text = (shape.text)(&value);
            let text = if text.starts_with("Window:") {
                text
            } else {
                format!("{window}\n{text}")
            };
            structured(&json, text)
        }
    }
}

#[tool_router(router = analysis_router, vis = "pub(crate)")]
impl IngeroMcp {
    /// Everything in one large answer (as `ingero explain --json`): summary, findings, idle split per thread, processes, op statistics, limits of the data. Prefer get_causal_chains.
    #[tool(
        name = "explain",
        annotations(title = "Full explanation", read_only_hint = true, open_world_hint = false),
        output_schema = readable::output_schema::<Report>()
    )]
    pub(crate) async fn explain(
        &self,
        Parameters(args): Parameters<ScopeArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let scope = bail_tool!(args.to_scope());
        let window = scope.window;
        let key = args.cache_key("");
        self.analyse(
            "explain",
            key,
            args.db.as_deref(),
            &ctx,
            window,
            move |db| explain(db, &scope.scope(db)?),
            Shape::readable(render::report_text),
        )
        .await
    }

    /// NCCL jobs: per rank and communicator, collectives, time in them and the wait for the last rank; stragglers and what their thread did meanwhile; clock offsets of a merged file. Empty without NCCL.
    #[tool(
        name = "get_rank_report",
        annotations(title = "Ranks and stragglers", read_only_hint = true, open_world_hint = false),
        output_schema = readable::output_schema::<RankReport>()
    )]
    pub(crate) async fn get_rank_report(
        &self,
        Parameters(args): Parameters<ScopeArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let scope = bail_tool!(args.to_scope());
        let window = scope.window;
        let key = args.cache_key("");
        self.analyse(
            "get_rank_report",
            key,
            args.db.as_deref(),
            &ctx,
            window,
            move |db| {
                let ds = ingero_tools::dataset::Dataset::load(db, &scope.scope(db)?)?;
                rank_report(db, &ds)
            },
            Shape::readable(ingero_tools::render_ranks::ranks_text),
        )
        .await
    }

    /// Per CUDA op: count, total, mean, p50/p95/p99, max (exact or estimated); host event totals.
    #[tool(
        name = "get_trace_stats",
        annotations(title = "CUDA op statistics", read_only_hint = true, open_world_hint = false),
        output_schema = readable::output_schema::<OpStatsReport>()
    )]
    pub(crate) async fn get_trace_stats(
        &self,
        Parameters(args): Parameters<ScopeArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let scope = bail_tool!(args.to_scope());
        let window = scope.window;
        let key = args.cache_key("");
        self.analyse(
            "get_trace_stats",
            key,
            args.db.as_deref(),
            &ctx,
            window,
            move |db| op_stats(db, &scope.scope(db)?),
            Shape::readable(render::stats_text),
        )
        .await
    }

    /// Start here. How idle the GPU was and why: the idle time split by what the GPU thread was doing (with its code), then findings ranked by the idle time they explain, each with evidence and a fix.
    #[tool(
        name = "get_causal_chains",
        annotations(title = "Causal chains", read_only_hint = true, open_world_hint = false),
        output_schema = super::chains_view::output_schema()
    )]
    pub(crate) async fn get_causal_chains(
        &self,
        Parameters(args): Parameters<ChainsArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let scope = bail_tool!(args.scope.to_scope()).needing_cuda();
        let window = scope.window;
        let detail = args.detail.unwrap_or_default();
        let key = args.scope.cache_key(&format!("{detail:?}"));
        let mut result = self
            .analyse(
                "get_causal_chains",
                key,
                args.scope.db.as_deref(),
                &ctx,
                window,
                move |db| causal_chains(db, &scope.scope(db)?).map(|r| ChainsView::new(r, detail)),
                Shape {
                    json: |v: &ChainsView| {
                        let mut j = v.to_value()?;
                        readable::annotate(&mut j);
                        Ok(j)
                    },
                    text: ChainsView::text,
                },
            )
            .await?;
        let base = args.compare_with.as_deref().map(str::trim);
        let Some(base) = base.filter(|b| !b.is_empty() && result.is_error != Some(true)) else {
            return Ok(result);
        };
        // The comparison reads each run's steady phase, as compare_runs does
        // by default, whatever window the chains above were asked for.
        let new = args.scope.db.as_deref();
        match self
            .compare_pair(base, new, WindowChoice::Steady, &ctx, "get_causal_chains")
            .await?
        {
            Ok(c) => {
                super::chains_compare::append(&mut result, &c, base)?;
                Ok(result)
            }
            Err(failed) => Ok(super::chains_compare::refused(failed)),
        }
    }

    /// Per process: CUDA calls and time, host events, off-CPU time: who waits, who works.
    #[tool(
        name = "get_per_process_breakdown",
        annotations(title = "Per-process breakdown", read_only_hint = true, open_world_hint = false),
        output_schema = readable::output_schema::<ProcessBreakdown>()
    )]
    pub(crate) async fn get_per_process_breakdown(
        &self,
        Parameters(args): Parameters<ScopeArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let scope = bail_tool!(args.to_scope());
        let window = scope.window;
        let key = args.cache_key("");
        self.analyse(
            "get_per_process_breakdown",
            key,
            args.db.as_deref(),
            &ctx,
            window,
            move |db| per_process(db, &scope.scope(db)?),
            Shape::readable(render::processes_text),
        )
        .await
    }

    /// Per time bucket: CUDA time by class, host events and the GPU's NVML samples (SM %, memory, PCIe, clock, power): when stalls happen, periodic or not.
    #[tool(
        name = "get_timeline",
        annotations(title = "Timeline", read_only_hint = true, open_world_hint = false),
        output_schema = schema_for_output::<Timeline>()
    )]
    pub(crate) async fn get_timeline(
        &self,
        Parameters(args): Parameters<TimelineArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let scope = bail_tool!(args.scope.to_scope());
        let window = scope.window;
        let bucket_ns = match args.bucket.as_deref().map(parse_duration_ns).transpose() {
            Ok(Some(0)) => return Ok(failure("bucket must be longer than zero".into())),
            Ok(b) => b,
            Err(e) => return Ok(failure(e.to_string())),
        };
        let key = args.scope.cache_key(&format!("{bucket_ns:?}"));
        self.analyse(
            "get_timeline",
            key,
            args.scope.db.as_deref(),
            &ctx,
            window,
            move |db| timeline(db, &scope.scope(db)?, bucket_ns),
            Shape::plain(|t| format!("{}{}", render::timeline_text(t), gpu_track_text(t))),
        )
        .await
    }

    /// SVG chart of a window: CUDA calls per process, the GPU thread's off-CPU time, CPU use, page allocations, findings shaded. For assistants that show images.
    #[tool(
        name = "get_timeline_chart",
        annotations(title = "Timeline chart", read_only_hint = true, open_world_hint = false),
        output_schema = schema_for_output::<ChartInfo>()
    )]
    pub(crate) async fn get_timeline_chart(
        &self,
        Parameters(args): Parameters<ChartArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let scope = bail_tool!(args.scope.to_scope());
        let window = match (args.start_offset_s, args.end_offset_s) {
            (Some(a), Some(b)) if a.is_finite() && b.is_finite() && b > a => {
                Some(ingero_report::svg::ChartWindow {
                    start_offset_s: a,
                    end_offset_s: b,
                })
            }
            (None, None) => None,
            _ => {
                return Ok(failure(
                    "give both start_offset_s and end_offset_s, with end after start".into(),
                ))
            }
        };
        let width = args.width.unwrap_or(1200).clamp(300, 8000);
        let height = args.height.unwrap_or(640).clamp(300, 8000);
        let pool = bail_tool!(self.pick_db(args.scope.db.as_deref()));
        let out = self
            .run_on(pool, &ctx, "get_timeline_chart", move |db| {
                let ds = ingero_tools::dataset::Dataset::load(db, &scope.scope(db)?)?;
                let line = teach::window_line(db.span(), &scope.window);
                Ok::<_, ToolError>((
                    ingero_report::svg::timeline_svg(&ds, window, width, height),
                    line,
                ))
            })
            .await;
        let (svg, line) = match out {
            Err(tool_err) => return Ok(tool_err),
            Ok(Err(e)) => return Ok(failure(e.to_string())),
            Ok(Ok(drawn)) => drawn,
        };
        let info = ChartInfo {
            mime_type: "image/svg+xml".to_string(),
            width,
            height,
            svg_bytes: svg.len(),
        };
        let mut result = structured(
            &info,
            format!(
                "{line}\ntimeline chart: {width}x{height} SVG, {} bytes",
                svg.len()
            ),
        )?;
        use base64::Engine as _;
        result.content.insert(
            0,
            rmcp::model::ContentBlock::image(
                base64::engine::general_purpose::STANDARD.encode(svg.as_bytes()),
                "image/svg+xml",
            ),
        );
        Ok(result)
    }

    /// Which code ran, from stack samples: hot stacks and top Python and native frames with shares, split into on-CPU, in CUDA, blocked and preempted. Names the functions behind idle time.
    #[tool(
        name = "get_stacks",
        annotations(title = "Hot stacks", read_only_hint = true, open_world_hint = false),
        output_schema = schema_for_output::<StackReport>()
    )]
    pub(crate) async fn get_stacks(
        &self,
        Parameters(args): Parameters<StacksArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let scope = bail_tool!(args.scope.to_scope());
        let window = scope.window;
        let set = match args
            .stacks
            .as_deref()
            .map(str::trim)
            .filter(|s| !s.is_empty())
        {
            None => None,
            Some(s) => match SampleSet::parse(s) {
                Some(v) => Some(v),
                None => {
                    return Ok(failure(format!(
                        "stacks {s:?}: use python, native, on_cpu, off_cpu or call_site"
                    )))
                }
            },
        };
        let category = match args
            .category
            .as_deref()
            .map(str::trim)
            .filter(|s| !s.is_empty())
        {
            None => None,
            Some(c) => match Category::parse(c) {
                Some(v) => Some(v),
                None => {
                    return Ok(failure(format!(
                        "category {c:?}: use on_cpu, in_cuda, blocked or preempted"
                    )))
                }
            },
        };
        let limit = args.limit.unwrap_or(10);
        if limit == 0 || limit > 100 {
            return Ok(failure("limit must be between 1 and 100".into()));
        }
        let query = StackQuery {
            scope: Scope::ALL,
            tid: args.tid,
            gpu_thread: args.gpu_thread.unwrap_or(false),
            set,
            category,
            limit: limit as usize,
        };
        let key = args.scope.cache_key(&format!(
            "{:?}|{}|{:?}|{:?}|{limit}",
            query.tid, query.gpu_thread, query.set, query.category
        ));
        self.analyse(
            "get_stacks",
            key,
            args.scope.db.as_deref(),
            &ctx,
            window,
            move |db| {
                let mut query = query;
                query.scope = scope.scope(db)?;
                hot_stacks(db, &query)
            },
            Shape::plain(ingero_tools::render_stacks::stacks_text),
        )
        .await
    }

    /// Raw CUDA calls and host events in time order, filtered by op, paged.
    #[tool(
        name = "get_events",
        annotations(title = "Raw events", read_only_hint = true, open_world_hint = false),
        output_schema = schema_for_output::<EventPage>()
    )]
    pub(crate) async fn get_events(
        &self,
        Parameters(args): Parameters<EventsArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let scope = bail_tool!(args.scope.to_scope());
        let window = scope.window;
        let limit = args.limit.unwrap_or(DEFAULT_EVENT_LIMIT);
        if limit == 0 || limit > MAX_EVENT_LIMIT {
            return Ok(failure(format!(
                "limit must be between 1 and {MAX_EVENT_LIMIT}"
            )));
        }
        let min_dur_ns = match args.min_dur.as_deref().map(parse_duration_ns).transpose() {
            Ok(d) => d,
            Err(e) => return Ok(failure(e.to_string())),
        };
        let op = args.op.clone().filter(|o| !o.trim().is_empty());
        let scope = scope.with_op(op.clone());
        let query = EventQuery {
            scope: Scope::ALL,
            op,
            min_dur_ns,
            limit,
            offset: args.offset.unwrap_or(0),
        };
        let key = args.scope.cache_key(&format!(
            "{:?}|{:?}|{}|{}",
            query.op, query.min_dur_ns, query.limit, query.offset
        ));
        self.analyse(
            "get_events",
            key,
            args.scope.db.as_deref(),
            &ctx,
            window,
            move |db| {
                let mut query = query;
                query.scope = scope.scope(db)?;
                query_events(db, &query)
            },
            Shape::plain(render::events_text),
        )
        .await
    }
}
