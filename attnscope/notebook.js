// The attention canvas in a notebook: anywidget's entry around the app's own canvas module.
// The Python side (attnscope/notebook.py) puts that module's source (app/ui/canvas/module.py) in place of
// CANVAS_SOURCE; it is loaded as a module from a blob URL (nothing fetched), and its default export, the Streamlit entry, is called with the
// same three things Streamlit gives it: the payload bytes, the element to draw in, and a setter for the pin.
const CANVAS_SOURCE = "__CANVAS_SOURCE__";
let drawing = null;

function canvasModule() {
  if (!drawing) {
    const url = URL.createObjectURL(new Blob([CANVAS_SOURCE], {type: 'text/javascript'}));
    drawing = import(url).then(module => module.default);
  }
  return drawing;
}

function bytesOf(value) { // anywidget hands binary traits over as a DataView
  if (value instanceof Uint8Array) return value;
  if (value && value.buffer) return new Uint8Array(value.buffer, value.byteOffset || 0, value.byteLength);
  return null;
}

async function render({model, el}) {
  const draw = await canvasModule();
  const setStateValue = (name, value) => { model.set(name, value); model.save_changes(); };
  const update = () => {
    const data = bytesOf(model.get('payload'));
    if (data && data.length) draw({data, parentElement: el, setStateValue});
  };
  update();
  model.on('change:payload', update);
  return () => model.off('change:payload', update);
}

export default {render};
