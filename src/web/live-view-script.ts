import { TERMINAL_STATES } from "../model/run-state.ts";
import type { ViewBudget } from "./run-view.ts";

/**
 * The small script that keeps a run's reading view live; the page reads the same without it. It listens
 * to `<page>/events` (the API's event stream) only to learn that something happened, then asks
 * `<page>/items?from=<seq>` for the server's rendering of the new events, so a streamed entry is the
 * same HTML as a reloaded one (Markdown, tool rows, the plan). A tool call still waiting for its result
 * is asked for again until it has one, and an entry already shown is replaced by its key (an open row
 * stays open). The header follows: state, status message, tokens and cost, and the run time ticks; so
 * does a waiting run's section (its plan and answers) where the page has one. Past
 * the page's budget it stops and links to the next page. It runs under the page's CSP nonce.
 */
export function liveViewScript(budget: Pick<ViewBudget, "events" | "bytes">): string {
  return `
(() => {
  const list = document.getElementById("transcript");
  if (!list) return;
  const base = location.pathname.replace(/\\/$/, "");
  const elapsed = document.getElementById("elapsed");
  const usage = document.getElementById("usage");
  const duration = (ms) => {
    const t = Math.max(0, Math.floor(ms / 1000)), h = Math.floor(t / 3600), m = Math.floor((t % 3600) / 60), s = t % 60;
    return h ? h + "h " + m + "m" : m ? m + "m " + s + "s" : s + "s";
  };
  // The run time ticks while the run runs: from what the server said, plus the time since.
  let clock = { ms: Number(elapsed?.dataset.ms || 0), at: Date.now(), running: elapsed?.dataset.running === "true" };
  if (elapsed) setInterval(() => {
    if (clock.running) elapsed.textContent = duration(clock.ms + Date.now() - clock.at);
  }, 1000);
  if (list.dataset.live !== "true") return;
  const after = Number(list.dataset.after || 0);
  let last = Number(list.dataset.lastSeq || 0);
  let bytes = list.innerHTML.length;
  let counted = last;
  let current = { tokens: Number(usage?.dataset.currentTokens || 0), cost: Number(usage?.dataset.currentCost || 0) };
  let executionFrom = Number(usage?.dataset.executionFrom || 0);
  const terminal = ${JSON.stringify(TERMINAL_STATES)};
  let source;
  let busy = false;
  let again = false;

  const header = (h) => {
    const state = document.getElementById("state");
    state.textContent = h.state_word;
    state.dataset.state = h.state;
    state.className = "state state-" + h.state;
    document.getElementById("status-message").textContent = h.status_message;
    clock = { ms: h.run_time_ms, at: Date.now(), running: h.running };
    if (elapsed) elapsed.textContent = duration(h.run_time_ms);
    if (h.state !== "INPROGRESS") current = { tokens: 0, cost: 0 };
    if (usage) {
      const tokens = h.tokens + current.tokens;
      document.getElementById("tokens").textContent = tokens.toLocaleString("en-US") + " tokens";
      const priced = h.cost_usd !== null || current.cost > 0;
      document.getElementById("cost-part").hidden = !priced;
      const cost = (h.cost_usd || 0) + current.cost;
      document.getElementById("cost").textContent = priced ? (cost > 0 && cost < 0.005 ? "<$0.01" : "$" + cost.toFixed(2)) : "";
    }
    // A finished run cannot be cancelled: the Cancel button goes once the run ends.
    if (terminal.includes(h.state)) document.getElementById("cancel-run")?.remove();
  };

  const apply = (view) => {
    for (const u of view.usage) {
      if (u.seq <= counted) continue;
      if (u.seq > executionFrom) { current.tokens += u.tokens; current.cost += u.cost_usd || 0; }
    }
    if (view.execution_from > executionFrom) {
      executionFrom = view.execution_from;
      current = { tokens: 0, cost: 0 };
      for (const u of view.usage) if (u.seq > executionFrom) { current.tokens += u.tokens; current.cost += u.cost_usd || 0; }
    }
    counted = Math.max(counted, view.last_seq);
    for (const item of view.items) {
      const template = document.createElement("template");
      template.innerHTML = item.html;
      const entry = template.content.firstElementChild;
      const shown = list.querySelector('li[data-key="' + CSS.escape(item.key) + '"]');
      if (shown) {
        if (shown.querySelector("details")?.open) entry.querySelector("details")?.setAttribute("open", "");
        shown.replaceWith(entry);
      } else {
        list.append(entry);
        bytes += item.html.length;
      }
    }
    last = Math.max(last, view.last_seq);
    if (view.plan !== null) {
      const plan = document.getElementById("plan");
      plan.innerHTML = view.plan;
      plan.hidden = false;
    }
    header(view.header);
    // The wait's section, replaced only when the wait changed: text typed into its forms stays.
    const gate = document.getElementById("gate");
    if (view.gate !== null && gate) {
      const template = document.createElement("template");
      template.innerHTML = view.gate;
      const fresh = template.content.firstElementChild;
      if (fresh && fresh.dataset.key !== gate.dataset.key) gate.replaceWith(fresh);
    }
    if (view.delivery !== null) {
      const shown = document.getElementById("delivery-view");
      const template = document.createElement("template");
      template.innerHTML = view.delivery;
      if (shown && template.content.firstElementChild) shown.replaceWith(template.content.firstElementChild);
    }
    // The page's budget holds for what is streamed into it too; past it, the next page takes over.
    if (view.more || last - after >= ${budget.events} || bytes >= ${budget.bytes}) {
      source?.close();
      const later = document.getElementById("later");
      later.href = "?after=" + last;
      later.hidden = false;
      return false;
    }
    return true;
  };

  // From the earliest call still waiting for its result, else from the next event.
  const from = () => {
    let seq = last + 1;
    for (const li of list.querySelectorAll("li[data-pending]")) seq = Math.min(seq, Number(li.dataset.seq));
    return seq;
  };
  const refresh = async () => {
    if (busy) { again = true; return; }
    busy = true;
    let live = true;
    let failed = false;
    try {
      const start = from();
      const left = Math.max(1, after + ${budget.events} - start + 1);
      const res = await fetch(base + "/items?from=" + start + "&limit=" + left, { headers: { accept: "application/json" } });
      if (res.ok) live = apply(await res.json());
      else failed = true;
    } catch {
      failed = true;
    } finally {
      busy = false;
      // Events that came meanwhile, or a failed read: asked again (after a pause when it failed).
      if ((again || failed) && live) { again = false; setTimeout(refresh, failed ? 2000 : 50); }
    }
  };
  source = new EventSource(base + "/events?after=" + last);
  source.onmessage = () => refresh();
})();
`;
}
