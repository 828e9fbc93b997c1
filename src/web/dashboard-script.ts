/**
 * The dashboard's only script (inline, allowed by its CSP nonce; the page reads fully without it). It
 * follows GET /dashboard/events and:
 * - replaces a changed run's row in place with the row the server rendered (same markup as the page);
 * - on the first page of the default order (most recently updated first), puts a changed run that is not
 *   shown at the top — at once when the page has no filter, else only if GET /dashboard/rows (the list's
 *   own filters, restricted to those ids) says it matches;
 * - updates the counts by state; re-reads the rows it shows when told to resync (a reconnect, a burst);
 * - refreshes relative times ("3 min ago") every 30 s, in the words of time-wording.ts.
 *
 * Rows never move or vanish under the reader, and the "Next page" link keeps the keyset cursor it was
 * rendered with (the updated_at and id of the last row as first listed): a run that changes moves ahead of
 * every cursor, so the following pages neither repeat nor skip any run that did not change meanwhile.
 */
export const DASHBOARD_SCRIPT = `(()=>{
const table=document.getElementById("runs"),body=document.getElementById("runs-body"),live=document.getElementById("live");
if(!table||!body||!window.EventSource)return;
const insert=table.dataset.insert;
const parse=h=>{const t=document.createElement("template");t.innerHTML=h;return[...t.content.querySelectorAll("tr[data-run-id]")]};
const rowOf=id=>[...body.querySelectorAll("tr[data-run-id]")].find(r=>r.dataset.runId===id);
const place=(tr,top)=>{const old=rowOf(tr.dataset.runId);if(old)old.replaceWith(tr);else if(top){document.getElementById("no-runs")?.remove();body.prepend(tr)}};
const ids=list=>"ids="+encodeURIComponent(list.join(","));
const fetchRows=async(query,top)=>{try{const r=await fetch("/dashboard/rows"+query,{credentials:"same-origin"});if(r.ok)for(const tr of parse(await r.text()).reverse())place(tr,top)}catch{}};
const say=t=>{if(live)live.textContent=t};
const es=new EventSource("/dashboard/events");
es.addEventListener("open",()=>say("Live: runs update as they change."));
es.addEventListener("error",()=>say("Live updates paused; reconnecting…"));
es.addEventListener("runs",e=>{const runs=JSON.parse(e.data).runs,unseen=[];
for(const r of runs){if(rowOf(r.id))place(parse(r.row)[0],false);else unseen.push(r)}
if(unseen.length&&insert==="all")for(const r of unseen.reverse())place(parse(r.row)[0],true);
else if(unseen.length&&insert==="filtered")fetchRows((location.search?location.search+"&":"?")+ids(unseen.map(r=>r.id)),true);
say(runs.length+(runs.length===1?" run":" runs")+" changed "+new Date().toLocaleTimeString()+".")});
es.addEventListener("counts",e=>{const c=JSON.parse(e.data);let n=0;for(const[s,v]of Object.entries(c)){n+=v;const el=document.getElementById("count-"+s);if(el)el.textContent=v}const t=document.getElementById("count-total");if(t)t.textContent=n});
es.addEventListener("resync",()=>{const shown=[...body.querySelectorAll("tr[data-run-id]")].map(r=>r.dataset.runId);if(shown.length)fetchRows("?"+ids(shown),false)});
const rel=iso=>{const d=Date.now()-Date.parse(iso),a=Math.abs(d),p=d>0;if(a<1e4)return"just now";let s;
if(a<6e4)s=Math.floor(a/1e3)+" s";else if(a<36e5)s=Math.floor(a/6e4)+" min";else if(a<864e5)s=Math.floor(a/36e5)+" h";
else if(a<1728e5)return p?"yesterday":"tomorrow";else if(a<2592e6)s=Math.floor(a/864e5)+" days";else return"on "+new Date(Date.parse(iso)).toISOString().slice(0,10);
return p?s+" ago":"in "+s};
setInterval(()=>{for(const t of document.querySelectorAll("main time[title]"))t.textContent=rel(t.getAttribute("datetime"))},30000);
})();`;
