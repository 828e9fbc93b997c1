/** Reads an SSE response as messages ({id, data}); comments are counted but not returned. */
export async function* readSse(
  res: Response,
): AsyncGenerator<{ id: string | undefined; data: string; event: string | undefined }> {
  const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += value;
    let end = buffer.indexOf("\n\n");
    while (end >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      end = buffer.indexOf("\n\n");
      let id: string | undefined;
      let event: string | undefined;
      const data: string[] = [];
      for (const line of block.split("\n")) {
        if (line.startsWith(":")) continue;
        const [field, ...rest] = line.split(":");
        const v = rest.join(":").replace(/^ /, "");
        if (field === "id") id = v;
        else if (field === "data") data.push(v);
        else if (field === "event") event = v;
      }
      if (data.length) yield { id, data: data.join("\n"), event };
    }
  }
}
