import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";

/** V8's `gc()` (its gc extension), as the options of a memory-reducing collection spell it. */
type CollectGarbage = (options: { type: "major"; execution: "sync"; flavor: "last-resort" }) => void;

/**
 * Gives back what starting left behind, once, when `dispatch serve` is up. Start-up allocates in a burst
 * (some 900 modules read, their TypeScript stripped, schemas and serializers compiled), and V8 answers a
 * burst by growing its young generation to 16 MB per semi-space and keeping the pages start-up touched;
 * an idle server allocates too little to give V8 a reason to shrink it again (its memory reducer waits
 * for a full collection that idling never causes). One memory-reducing collection — what V8 does under
 * memory pressure: every generation collected, the young generation shrunk back, free pages returned — cuts
 * idle RSS by about a fifth (bench/README.md, "Fourth round: idle memory"). Later load grows the heap
 * again as far as that load needs.
 *
 * Node exposes no call for it; V8's gc extension is reached the way leak detectors do, in a context of its
 * own, and the flag is turned off again so that no later context (a worker, `vm`) sees a `gc` global.
 */
export function releaseStartUpMemory(): void {
  setFlagsFromString("--expose-gc");
  let collect: CollectGarbage;
  try {
    collect = runInNewContext("gc") as CollectGarbage;
  } finally {
    setFlagsFromString("--no-expose-gc");
  }
  collect({ type: "major", execution: "sync", flavor: "last-resort" });
}
