/**
 * Workflows for tests: ComfyUI's standard SD 1.5 text-to-image workflow in API format
 * (checkpoint loader, two text encoders, empty latent, sampler, decoder, save), the same in UI
 * format (as the editor saves it), an image-to-image one that loads an uploaded picture, and one
 * with two save nodes.
 */

/** The standard text-to-image workflow, API format, as ComfyUI's "Export (API)" writes it. */
export const textToImage = {
  "3": {
    class_type: "KSampler",
    inputs: {
      seed: 156680208700286,
      steps: 20,
      cfg: 8,
      sampler_name: "euler",
      scheduler: "normal",
      denoise: 1,
      model: ["4", 0],
      positive: ["6", 0],
      negative: ["7", 0],
      latent_image: ["5", 0]
    },
    _meta: { title: "KSampler" }
  },
  "4": {
    class_type: "CheckpointLoaderSimple",
    inputs: { ckpt_name: "v1-5-pruned-emaonly.safetensors" },
    _meta: { title: "Load Checkpoint" }
  },
  "5": {
    class_type: "EmptyLatentImage",
    inputs: { width: 512, height: 512, batch_size: 1 },
    _meta: { title: "Empty Latent Image" }
  },
  "6": {
    class_type: "CLIPTextEncode",
    inputs: { text: "beautiful scenery nature glass bottle landscape, purple galaxy bottle", clip: ["4", 1] },
    _meta: { title: "Positive" }
  },
  "7": {
    class_type: "CLIPTextEncode",
    inputs: { text: "text, watermark", clip: ["4", 1] },
    _meta: { title: "Negative" }
  },
  "8": { class_type: "VAEDecode", inputs: { samples: ["3", 0], vae: ["4", 2] }, _meta: { title: "VAE Decode" } },
  "9": {
    class_type: "SaveImage",
    inputs: { filename_prefix: "ComfyUI", images: ["8", 0] },
    _meta: { title: "Save Image" }
  }
} as const

/** The beginning of the same workflow as the editor saves it (UI format): `nodes` and `links` arrays. */
export const uiFormat = {
  last_node_id: 9,
  last_link_id: 9,
  nodes: [
    {
      id: 3,
      type: "KSampler",
      pos: [863, 186],
      inputs: [{ name: "model", type: "MODEL", link: 1 }],
      widgets_values: [156680208700286, "randomize", 20, 8, "euler", "normal", 1]
    },
    {
      id: 9,
      type: "SaveImage",
      pos: [1451, 189],
      inputs: [{ name: "images", type: "IMAGE", link: 9 }],
      widgets_values: ["ComfyUI"]
    }
  ],
  links: [[1, 4, 0, 3, 0, "MODEL"], [9, 8, 0, 9, 0, "IMAGE"]],
  groups: [],
  config: {},
  extra: {},
  version: 0.4
}

/** Image to image: an uploaded picture encoded, sampled and saved. */
export const imageToImage = {
  ...textToImage,
  "10": { class_type: "LoadImage", inputs: { image: "example.png" }, _meta: { title: "Photo" } },
  "11": { class_type: "VAEEncode", inputs: { pixels: ["10", 0], vae: ["4", 2] } },
  "3": { ...textToImage["3"], inputs: { ...textToImage["3"].inputs, latent_image: ["11", 0] } }
}

/**
 * Two save nodes that finish at different times: the first image saved (node 9), then sampled
 * again from its latent (a second sampler, node 10) and saved at double size (node 12).
 */
export const twoSaves = {
  ...textToImage,
  "10": {
    class_type: "KSampler",
    inputs: { ...textToImage["3"].inputs, denoise: 0.5, latent_image: ["3", 0] },
    _meta: { title: "Refine" }
  },
  "11": { class_type: "VAEDecode", inputs: { samples: ["10", 0], vae: ["4", 2] }, _meta: { title: "VAE Decode 2" } },
  "12": {
    class_type: "SaveImage",
    inputs: { filename_prefix: "Refined", images: ["11", 0] },
    _meta: { title: "Save Refined" }
  }
}

/** An app: a prompt and a seed into `provider.comfyui` running `workflow`, its image out. */
export const app = (workflow: unknown, extra: Record<string, unknown> = {}) => ({
  name: "ComfyUI text to image",
  nodes: [
    { id: "prompt", type: "input.text", label: "Prompt", config: { name: "prompt", required: true } },
    { id: "seed", type: "input.text", label: "Seed", config: { name: "seed", default: "42" } },
    {
      id: "render",
      type: "provider.comfyui",
      label: "Render",
      config: { workflow, inputs: { "Positive.text": "{{prompt}}", "3.seed": "{{seed}}" }, ...extra }
    },
    { id: "image", type: "output.image", label: "Image" }
  ],
  edges: [
    { source: "prompt", target: "render" },
    { source: "seed", target: "render" },
    { source: "render", target: "image" }
  ]
})
